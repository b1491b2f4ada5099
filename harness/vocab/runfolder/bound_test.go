package runfolder

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// TestTrajectoryBound: once the trajectory nears MaxTrajectoryBytes, a large body is recorded
// as its beginning, length and sha256, and a turn's large input as its length and sha256,
// every line still JSON; a small body and the lines before the bound stay whole.
func TestTrajectoryBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), TrajectoryFile)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := newTrajectory(f, func(err error) { t.Errorf("a write failed: %v", err) })
	big, _ := json.Marshal(map[string]string{"content": strings.Repeat("x", 1<<20)})
	tr.Event(model.Event{Kind: model.KindRequest, URL: "u", Body: big}) // far from the bound: whole
	tr.out.n = MaxTrajectoryBytes - 1<<20                               // as if the episode had written that much
	tr.Event(model.Event{Kind: model.KindRequest, URL: "u", Body: big})
	tr.Event(model.Event{Kind: model.KindResponse, Status: 200, Body: json.RawMessage(`{"small":true}`)})
	input := []model.Message{{Role: model.RoleUser, Content: strings.Repeat("y", 2<<20)}}
	tr.Turn(1, model.Request{Messages: input}, model.Reply{}, nil)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var lines []map[string]json.RawMessage
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var v map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("a line that is not JSON: %v", err)
		}
		lines = append(lines, v)
	}
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4", len(lines))
	}
	if string(lines[0]["body"]) != string(big) {
		t.Errorf("the first body, before the bound, was not kept whole")
	}
	if n := len(lines[1]["body"]); n > cutBodyBytes {
		t.Errorf("a body past the bound kept %d bytes, want at most %d", n, cutBodyBytes)
	}
	sum := sha256.Sum256(big)
	if got := string(lines[1]["body_sha256"]); got != `"`+hex.EncodeToString(sum[:])+`"` {
		t.Errorf("a body past the bound has the sha256 %s", got)
	}
	if got := string(lines[2]["body"]); got != `{"small":true}` {
		t.Errorf("a small body past the bound became %s, want it whole", got)
	}
	if got := string(lines[3]["input"]); got != "null" {
		t.Errorf("a large input past the bound was kept: %.80s", got)
	}
	if got := string(lines[3]["input_bytes"]); got == "" {
		t.Errorf("a large input past the bound has no input_bytes: %v", lines[3])
	}
}
