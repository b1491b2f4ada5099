package data

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/data/hub"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakehub"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestRepairGoesOnPastAFileItCannotRemove: a corrupt file whose blob cannot be removed (here a
// folder in its place, holding a file) is named and left unrepaired, since fetched again it
// would be linked to what stayed; the other bad files are still fetched again, not left
// removed and missing by a repair that stopped at the first.
func TestRepairGoesOnPastAFileItCannotRemove(t *testing.T) {
	_, files, cfg := newHub(t)
	if _, err := pull(t, cfg, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	cache := hub.Cache{Dir: cfg.CacheDir}
	stuck := "sre/Scenario-1/k8s_events_raw.tsv" // before the other in the order repair takes
	blob := cache.BlobPath(testRepo, fakehub.ETag(files[stuck]))
	if err := os.Remove(blob); err != nil {
		t.Fatal(err)
	}
	testfs.Write(t, filepath.Join(blob, "kept"), "a file in a folder where the blob was\n")
	gone := "sre/Scenario-2/ground_truth.yaml"
	if err := os.Remove(filepath.Join(cache.SnapshotDir(testRepo, fakehub.Commit(files)), gone)); err != nil {
		t.Fatal(err)
	}
	spec, err := ParseHubSpec("hf:" + testRepo)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Verify(context.Background(), cfg, spec, true, PullOptions{})
	if err == nil {
		t.Fatal("a repair that could not remove a corrupt blob succeeded")
	}
	textcheck.Has(t, "the error", err.Error(), "repair "+stuck, blob)
	if res.Repaired != 1 {
		t.Errorf("%d files said repaired, want 1 (%s)", res.Repaired, gone)
	}
	checkSnapshot(t, cfg, files, []string{gone})
}
