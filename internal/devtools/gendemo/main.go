// Command gendemo regenerates the demo dataset archive embedded in the binary
// (data/demo/demo.tar.zst): `go generate ./data`.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/internal/devtools/demogen"
)

func main() {
	out := flag.String("out", "data/demo/demo.tar.zst", "archive to write")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gendemo:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	work, err := os.MkdirTemp("", "gendemo-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }() // in the temporary folder, the system's to clean if it stays
	dataset := filepath.Join(work, "demo")
	if err := demogen.Build(dataset); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := data.PackTarZst(dataset, &buf); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s (%d bytes)\n", out, buf.Len())
	return nil
}
