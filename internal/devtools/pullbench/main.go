// Command pullbench measures `aa-grade data pull` against curl fetching the same files from a
// local fake Hub (the practical limit of the machine and the server), with the peak memory of
// each, at two file sizes to show that memory does not grow with file size.
//
//	go run ./internal/devtools/pullbench -aa-grade bin/aa-grade
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/aa-grade/aa-grade/internal/devtools/benchproc"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakehub"
)

const repo = "ArtificialAnalysis/ITBench-AA"

func main() {
	bin := flag.String("aa-grade", "bin/aa-grade", "the aa-grade binary to measure")
	totalMiB := flag.Int("total-mib", 1024, "bytes to pull in all, MiB")
	runs := flag.Int("runs", 3, "runs of each client; the median is reported")
	parallel := flag.Int("parallel", 8, "files fetched at once by both clients")
	flag.Parse()
	if _, err := exec.LookPath("curl"); err != nil {
		fail(err)
	}
	for _, files := range []int{64, 8} {
		size := *totalMiB << 20 / files
		h := fakehub.New()
		set := dataset(files, size)
		commit := h.ServeSample(repo, set)
		aa := measure(*runs, func(dir string) *exec.Cmd {
			cmd := exec.Command(*bin, "data", "pull", "--parallel", fmt.Sprint(*parallel))
			cmd.Env = append(os.Environ(), "HF_ENDPOINT="+h.URL, "HF_HUB_CACHE="+dir, "HF_TOKEN=")
			return cmd
		})
		curl := measure(*runs, func(dir string) *exec.Cmd {
			args := []string{"--no-progress-meter", "--silent", "--show-error", "--fail", "--location", "--parallel",
				"--parallel-max", fmt.Sprint(*parallel)}
			i := 0
			for p := range set {
				args = append(args, "--output", filepath.Join(dir, fmt.Sprintf("f%d", i)),
					fmt.Sprintf("%s/datasets/%s/resolve/%s/%s", h.URL, repo, commit, p))
				i++
			}
			return exec.Command("curl", args...)
		})
		h.Close()
		mib := float64(*totalMiB)
		fmt.Printf("%d files of %d MiB (%d MiB in all), %d at once, median of %d runs\n", files, size>>20, *totalMiB,
			*parallel, *runs)
		for _, row := range []struct {
			name string
			r    result
		}{{"aa-grade data pull", aa}, {"curl --parallel", curl}} {
			fmt.Printf("  %-18s  %6.2f s  %7.1f MiB/s  CPU %5.2f s  peak RSS %5.1f MiB\n",
				row.name, row.r.wall.Seconds(), mib/row.r.wall.Seconds(), row.r.cpu.Seconds(), float64(row.r.rss)/1024)
		}
		fmt.Printf("  aa-grade throughput = %.0f%% of curl's\n", 100*curl.wall.Seconds()/aa.wall.Seconds())
	}
}

// dataset is an index and n large LFS files of size bytes.
func dataset(n, size int) map[string]fakehub.File {
	files := fakehub.SampleDataset(n, 0)
	rng := rand.New(rand.NewPCG(7, 7))
	block := make([]byte, 1<<20)
	for i := range block {
		block[i] = byte('a' + rng.IntN(26))
	}
	for i := 1; i <= n; i++ {
		content := make([]byte, size)
		for off := 0; off < size; off += len(block) {
			copy(content[off:], block)
			content[off] = byte(i) // no two files alike
		}
		files[fmt.Sprintf("sre/Scenario-%d/k8s_events_raw.tsv", i)] = fakehub.File{Content: content, LFS: true}
	}
	return files
}

type result struct {
	wall time.Duration
	cpu  time.Duration // user + system, median run
	rss  int64         // KiB
}

// measure runs a command several times, each into a fresh folder, and returns the median
// wall time and the largest peak resident memory.
func measure(runs int, command func(dir string) *exec.Cmd) result {
	var walls, cpus []time.Duration
	var rss int64
	for range runs {
		dir, err := os.MkdirTemp("", "pullbench")
		if err != nil {
			fail(err)
		}
		sample, err := benchproc.Run(command(dir))
		if err != nil {
			fail(err)
		}
		walls = append(walls, sample.Wall)
		cpus = append(cpus, sample.CPU)
		rss = max(rss, sample.PeakKiB)
		if err := os.RemoveAll(dir); err != nil { // a pulled dataset each: they would fill the disk
			fail(err)
		}
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	return result{wall: walls[len(walls)/2], cpu: cpus[len(cpus)/2], rss: rss}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "pullbench:", err)
	os.Exit(1)
}
