package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/harness/runfolder"
	"github.com/aa-grade/aa-grade/harness/viewer"
	"github.com/aa-grade/aa-grade/internal/termtext"
)

// defaultViewAddr is where the viewer listens unless told: a fixed port, so a bookmark keeps
// working; when another program holds it, any free port.
const defaultViewAddr = "127.0.0.1:7480"

func newViewCommand() *cli.Command {
	return &cli.Command{
		Name:      "view",
		Usage:     "read runs in a browser: scores, the task x repeat grid, every episode turn by turn",
		ArgsUsage: "RUN...",
		Description: "Serves the run folders, read-only, on this machine only (a loopback address), and prints the URL;\n" +
			"a run still going is shown as it stands and refreshes. Ctrl-C stops the viewer (exit 0).\n" +
			"With --out DIR, writes the same pages as static files to DIR instead (DIR/index.html), to share.\n" +
			"Submissions are graded entity by entity against the ground truth of the run's dataset\n" +
			"(for a Hub dataset, from the local cache only: aa-grade data pull fills it).\n\n" +
			"Example: aa-grade view runs/opus runs/qwen",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Value: defaultViewAddr, Sources: env("addr"),
				Usage: "where to listen: HOST:PORT, :PORT or PORT, HOST a loopback address"},
			&cli.StringFlag{Name: "out", Sources: env("out"), Usage: "write the pages as static files to this folder and exit"},
		},
		Action: runView,
	}
}

func runView(ctx context.Context, cmd *cli.Command) error {
	if cmd.NArg() == 0 {
		return usageErrorf("view needs at least one RUN folder; see aa-grade view --help")
	}
	if cmd.IsSet("out") && cmd.IsSet("addr") {
		return usageErrorf("--out writes files and serves nothing: give --addr or --out, not both")
	}
	v, err := viewer.New(cmd.Args().Slice(), viewer.Options{GroundTruth: groundTruths})
	if err != nil {
		return runFolderError(err)
	}
	defer v.Close()
	stdout := cmd.Root().Writer
	if out := cmd.String("out"); out != "" {
		if err := v.Export(ctx, out); err != nil {
			if ctx.Err() != nil {
				return &exitError{code: 130, err: fmt.Errorf("interrupted: %w", err)}
			}
			return err
		}
		printLine(stdout, "Wrote %s", termtext.Sanitize(out+string(os.PathSeparator)+"index.html"))
		return nil
	}
	ln, err := viewer.Listen(cmd.String("addr"))
	if errors.Is(err, viewer.ErrNotLoopback) {
		return usageErrorf("%v", err)
	}
	if err != nil && !cmd.IsSet("addr") {
		ln, err = viewer.Listen("127.0.0.1:0") // the default port is taken
	}
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: v, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	printLine(stdout, "Viewing %d run(s) at http://%s/ (Ctrl-C to stop)", cmd.NArg(), ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// groundTruths reads the ground truth of a run's tasks from its dataset, at the commit the
// run recorded for a Hub dataset, from the cache only: a page never waits on the network (a
// run made on this machine left the dataset in the cache; elsewhere, aa-grade data pull).
func groundTruths(ctx context.Context, h runfolder.Header) (map[string][]byte, error) {
	spec := h.Dataset
	if hs, err := data.ParseHubSpec(spec); err == nil && h.DatasetCommit != "" {
		hs.Revision = h.DatasetCommit
		spec = hs.String()
	}
	cfg := hubConfig()
	cfg.Offline = true
	ds, err := data.Open(ctx, spec, data.OpenOptions{Hub: cfg, IndexOnly: true, Tasks: h.Tasks})
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, t := range ds.Tasks {
		out[t.ID] = t.GroundTruth
	}
	return out, nil
}
