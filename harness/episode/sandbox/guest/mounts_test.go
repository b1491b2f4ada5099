//go:build linux

package guest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestGiveWorkspaceTellsAFolderNotHandedOver: a workspace the guest cannot hand to the sandbox
// user is an error naming it, which fails the start, instead of a workspace the model cannot
// write in. (That one handed over is the user's is proved by the sandbox's tests, whose
// commands write in it as nobody.)
func TestGiveWorkspaceTellsAFolderNotHandedOver(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "workspace")
	err := giveWorkspace(missing, wire.IDs{UID: os.Getuid(), GID: os.Getgid()})
	if err == nil {
		t.Fatal("a workspace that could not be handed over was taken as the sandbox user's")
	}
	textcheck.Has(t, "the error", err.Error(), "hand the workspace to the sandbox user", missing)
}
