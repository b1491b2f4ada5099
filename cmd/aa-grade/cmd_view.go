package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/harness/readers/viewer"
	"github.com/aa-grade/aa-grade/harness/vocab/atif"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/english"
)

// defaultViewAddr is where the viewer listens unless told: a fixed port, so a bookmark keeps
// working; when another program holds it, any free port.
const defaultViewAddr = "127.0.0.1:7480"

// viewOptions are the flags of aa-grade view.
type viewOptions struct {
	flagsSet
	addr, host, out string
}

func (o *viewOptions) flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "addr", Value: defaultViewAddr, Destination: &o.addr, Sources: env("view-addr"),
			Usage: "where to listen: HOST:PORT, :PORT or PORT, HOST a loopback address"},
		// No variable sets it: serving beyond this machine is said on the command line each time.
		&cli.StringFlag{Name: "host", Destination: &o.host,
			Usage: "listen on this address instead of loopback (0.0.0.0: every network): serves the episodes to it"},
		&cli.StringFlag{Name: "out", Destination: &o.out, Usage: "write the pages as static files to this folder and exit"},
	}
}

func (o *viewOptions) Validate() error {
	if o.isSet("out") && o.isSet("addr") {
		return usageErrorf("--out writes files and serves nothing: give --addr or --out, not both")
	}
	if o.isSet("out") && o.isSet("host") {
		return usageErrorf("--out writes files and serves nothing: give --host or --out, not both")
	}
	if host, _, err := net.SplitHostPort(o.addr); o.isSet("host") && err == nil && host != "" {
		return usageErrorf("--host %s and --addr %s both name the host: give --addr only the port", o.host, o.addr)
	}
	if o.out != "" {
		return checkOutPath("out", o.out)
	}
	if _, err := viewer.CheckAddr(o.addr); err != nil {
		return usageErrorf("--addr %w", err)
	}
	return nil
}

func newViewCommand() *cli.Command {
	var opts viewOptions
	return &cli.Command{
		Name:      "view",
		Usage:     "read runs in a browser: scores, the task x repeat grid, every episode turn by turn",
		ArgsUsage: "RUN|TRAJECTORIES...",
		Description: "Serves the run folders, read-only, on this machine only (a loopback address; --host HOST serves\n" +
			"them to HOST's network, with a warning: anyone reaching it reads the episodes), and prints the URL;\n" +
			"a run still going is shown as it stands and refreshes. Ctrl-C stops the viewer (exit 0).\n" +
			"A folder of runs (runs/) stands for the runs in it; a folder that is not a run is named and skipped.\n" +
			"ATIF trajectories of any harness are shown too, step by step: a Harbor job folder (or a folder of\n" +
			"jobs: <trial>/agent/trajectory.json, with each trial's reward), aa-grade export's folder, a folder of\n" +
			"ATIF .json files, or one file; they are not graded (aa-grade grade scores their answers).\n" +
			"With --out DIR, writes the same pages as static files to DIR instead (DIR/index.html), to share.\n" +
			"Submissions are graded entity by entity against the ground truth of the run's dataset\n" +
			"(for a Hub dataset, from the local cache only: aa-grade data pull fills it).\n\n" +
			"Example: aa-grade view runs/opus runs/qwen",
		Flags:  opts.flags(),
		Action: action(&opts, runView),
	}
}

func runView(ctx context.Context, opts viewOptions, args []string, con console) error {
	if len(args) == 0 {
		return usageErrorf("view needs at least one RUN folder, folder of runs or ATIF trajectory; see aa-grade view --help")
	}
	runs, documents := splitTrajectories(args)
	ra := expandRuns(runs)
	if len(ra.dirs)+len(documents) == 0 {
		return ra.none(con.err)
	}
	ra.printRunSkips(con.err)
	v, err := viewer.New(ra.dirs, documents, viewer.Options{GroundTruth: groundTruths, Network: opts.isSet("host")})
	if err != nil {
		return err
	}
	defer func() { _ = v.Close() }() // read-only folders: nothing to lose
	stdout := con.out
	if out := opts.out; out != "" {
		if err := v.Export(ctx, out); err != nil {
			if ctx.Err() != nil {
				return interrupted(fmt.Errorf("interrupted: %w", err))
			}
			return err
		}
		printLine(stdout, "Wrote %s", out+string(os.PathSeparator)+"index.html")
		return ra.skipError("viewed")
	}
	ln, shown, err := listenView(opts, con)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: v, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown) // past its timeout, Serve returns all the same
	}()
	printLine(stdout, "Viewing %s at http://%s/ (Ctrl-C to stop)", viewed(len(ra.dirs), len(documents)), shown)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// splitTrajectories tells view's ATIF trajectories (another harness's, a Harbor job's, aa-grade's
// export: a document, or a folder that holds no run but documents atif.FindDocuments finds, one
// of which reads) from the runs, which are the rest.
func splitTrajectories(args []string) (runs, documents []string) {
	for _, arg := range args {
		if isTrajectories(arg) {
			documents = append(documents, arg)
		} else {
			runs = append(runs, arg)
		}
	}
	return runs, documents
}

func isTrajectories(arg string) bool {
	if _, err := runfolder.ReadHeader(arg); !errors.Is(err, runfolder.ErrNotRunFolder) {
		return false
	}
	if _, ok := runsIn(arg); ok {
		return false
	}
	found, err := atif.FindDocuments(arg)
	if err != nil {
		return false
	}
	if found.Layout != atif.LayoutFiles {
		return len(found.Episodes) > 0
	}
	// Any .json file is a candidate: a folder of answers is not a folder of trajectories.
	for _, e := range found.Episodes {
		if _, err := atif.Read(e.Path); err == nil {
			return true
		}
	}
	return false
}

// viewed says what view shows: "2 runs", "1 folder of trajectories", or both.
func viewed(runs, documents int) string {
	switch {
	case documents == 0:
		return english.Count(runs, "run")
	case runs == 0:
		return english.Count(documents, "source") + " of ATIF trajectories"
	}
	return english.Count(runs, "run") + " and " + english.Count(documents, "source") + " of ATIF trajectories"
}

// listenView listens where the flags say: loopback, on the default port or any free one when
// another program holds it, or --host, warning that the episodes are then served to the network.
// shown is the address to print, with --host's host as given (0.0.0.0, not the [::] it becomes).
func listenView(opts viewOptions, con console) (ln net.Listener, shown string, err error) {
	if !opts.isSet("host") {
		ln, err := viewer.Listen(opts.addr) // an address Validate checked
		if err != nil && !opts.isSet("addr") {
			ln, err = viewer.Listen("127.0.0.1:0") // the default port is taken
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, "", usageErrorf("--addr %s: %w; give another port, or --addr 0 for any free one", opts.addr, err)
		}
		if err != nil {
			return nil, "", fmt.Errorf("listen: %w", err)
		}
		return ln, ln.Addr().String(), nil
	}
	ln, public, err := viewer.ListenOn(opts.host, opts.addr)
	if err != nil {
		return nil, "", fmt.Errorf("listen on --host %s: %w", opts.host, err)
	}
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		return nil, "", errors.Join(fmt.Errorf("listen on --host %s: %w", opts.host, err), ln.Close())
	}
	shown = net.JoinHostPort(opts.host, port)
	if public {
		printLine(con.err, "warning: serving to the network at %s, with no password: whoever reaches it reads every "+
			"episode's prompts, replies, commands, outputs and submissions", shown)
	}
	return ln, shown, nil
}

// groundTruths reads the ground truth of a run's tasks from its dataset, at the commit the
// run recorded for a Hub dataset, from the cache only: a page never waits on the network (a
// run made on this machine left the dataset in the cache; elsewhere, aa-grade data pull).
func groundTruths(ctx context.Context, h runfolder.Header) (map[string][]byte, error) {
	cfg := hubConfig()
	cfg.Offline = true
	ds, err := data.Open(ctx, recordedDataset(h), data.OpenOptions{Hub: cfg, IndexOnly: true, Tasks: h.Tasks})
	if err != nil {
		return nil, pullHint(err)
	}
	out := map[string][]byte{}
	for _, t := range ds.Tasks {
		out[t.ID] = t.GroundTruth
	}
	return out, nil
}
