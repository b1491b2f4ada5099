//go:build linux

// Command runbench measures a whole `aa-grade run` against a zero-latency scripted model: every
// demo task x 3 repeats, 30 turns each, at several --parallel levels. It reports the wall time,
// the harness's own time per turn (episode time minus model time minus tool time: sandbox
// start-up and teardown, the loop, trajectory and results writing, grading, amortised over the
// turns), the model and tool time per turn, and aa-grade's peak memory, to show that memory
// grows with the episodes running at once and not with the run's length. CPU per turn is the
// whole machine's (user and system, from /proc/stat) less this process's (the fake model):
// aa-grade and every sandbox process, whoever reaps them (a process's own rusage misses those
// reaped outside its tree, as happens when a pid namespace ends). On a small machine, episodes
// beyond the cores queue for CPU and the wall-time columns grow with them.
//
//	go run ./internal/devtools/runbench -aa-grade bin/aa-grade
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/devtools/benchproc"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
)

func main() {
	bin := flag.String("aa-grade", "bin/aa-grade", "the aa-grade binary to measure")
	turns := flag.Int("turns", 30, "turns per episode")
	levels := flag.String("parallel", "4,32", "the --parallel levels to measure")
	sandbox := flag.String("sandbox", "auto", "the sandbox backend")
	flag.Parse()
	fake := &fakemodel.Server{Script: fakemodel.Script{Turns: *turns, Command: "true",
		Answer: []string{"otel-demo/NetworkPolicy/ad-deny-ingress"}}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	go func() { _ = http.Serve(ln, fake) }() // serves until the benchmark exits
	cache, err := os.MkdirTemp("", "runbench-cache")
	if err != nil {
		fail(err)
	}
	defer func() { _ = os.RemoveAll(cache) }() // in the temporary folder, the system's to clean if it stays
	fmt.Printf("%-9s %9s %9s %14s %12s %12s %10s %12s\n", "PARALLEL", "EPISODES", "WALL", "OVERHEAD/TURN", "MODEL/TURN",
		"TOOL/TURN", "CPU/TURN", "PEAK RSS")
	for _, level := range strings.Split(*levels, ",") {
		out, err := os.MkdirTemp("", "runbench-run")
		if err != nil {
			fail(err)
		}
		cmd := exec.Command(*bin, "run", "--dataset", "demo", "--model", "openai/runbench", "--repeats", "3",
			"--max-turns", strconv.Itoa(*turns), "--parallel", level, "--sandbox", *sandbox, "--out", out)
		cmd.Env = append(os.Environ(), "OPENAI_BASE_URL=http://"+ln.Addr().String(), "OPENAI_API_KEY=sk-runbench-000000",
			"XDG_CACHE_HOME="+cache)
		cmd.Stderr = os.Stderr
		machine, self := machineCPU(), selfCPU()
		s, err := benchproc.Run(cmd)
		if err != nil {
			fail(err)
		}
		cpu := (machineCPU() - machine) - (selfCPU() - self)
		st, err := readStats(out)
		if err != nil {
			fail(err)
		}
		if err := os.RemoveAll(out); err != nil { // a run folder each: they would fill the disk
			fail(err)
		}
		per := func(seconds float64) string {
			return fmt.Sprintf("%.2f ms", 1000*seconds/float64(st.turns))
		}
		fmt.Printf("%-9s %9d %9s %14s %12s %12s %10s %8.1f MiB\n", level, st.episodes, s.Wall.Round(10*time.Millisecond),
			per(st.duration-st.model-st.tool), per(st.model), per(st.tool), per(cpu.Seconds()), float64(s.PeakKiB)/1024)
	}
}

type stats struct {
	episodes, turns       int
	duration, model, tool float64
}

// readStats sums the episodes' turns and times from the run folder's results.
func readStats(dir string) (stats, error) {
	run, err := runfolder.Read(dir)
	if err != nil {
		return stats{}, err
	}
	var st stats
	for _, r := range run.Results {
		if r.Status != "ok" {
			return st, fmt.Errorf("%s: %s repeat %d ended %s", dir, r.Task, r.Repeat, r.Status)
		}
		st.episodes++
		st.turns += r.Turns
		st.duration += r.Duration
		st.model += r.ModelTime
		st.tool += r.ToolTime
	}
	if len(run.Warnings) > 0 {
		return st, fmt.Errorf("%s", strings.Join(run.Warnings, "; "))
	}
	return st, nil
}

// machineCPU is the CPU time every core has spent busy (user, nice, system, irq, softirq)
// since boot.
func machineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		fail(err)
	}
	line, _, _ := strings.Cut(string(b), "\n") // cpu user nice system idle iowait irq softirq ...
	f := strings.Fields(line)
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ is 100 on Linux
}

// selfCPU is this process's CPU time (the fake model server).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru) // fails only for a bad who or address
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "runbench:", err)
	os.Exit(1)
}
