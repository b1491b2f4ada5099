package main

import (
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/image/registry"
)

// TestImageProgressLines: each pull of a sandbox image is a line: bwrap's from the registry
// with its layers and size, docker's through its daemon.
func TestImageProgressLines(t *testing.T) {
	ref, err := registry.ParseReference("127.0.0.1:5000/aa/sandbox:1")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	tell := imageProgress(&out)
	tell(sandbox.PullingImage{Ref: ref, Layers: 3, Bytes: 12_345_678})
	tell(sandbox.PullingThroughDaemon{Ref: "127.0.0.1:5000/aa/sandbox:1"})
	want := "pulling 127.0.0.1:5000/aa/sandbox:1: 3 layers, 12.3 MB\n" +
		"pulling 127.0.0.1:5000/aa/sandbox:1 through the Docker daemon\n"
	if out.String() != want {
		t.Errorf("printed\n%swant\n%s", out.String(), want)
	}
	if imageProgress(nil) != nil {
		t.Error("with nowhere to print, the progress is not nil")
	}
}
