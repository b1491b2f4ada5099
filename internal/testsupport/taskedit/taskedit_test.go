package taskedit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRenamedReplacesWholeNamesAndSuffixes: a name is replaced where it is a whole word or
// the start of a pod's, with the pod's suffixes, in file names and contents alike; a longer
// name is not mistaken for a shorter one, nor a timestamp's digits for a suffix.
func TestRenamedReplacesWholeNamesAndSuffixes(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	line := "14:10:18.768475625 otel-demo/frontend-proxy frontend-7bc6b4d79c-mg27q " +
		"oteldemo.FrontendService/Get frontends ad-5cd68c8574-kp4q9 ad-5cd68c8574-kp4q9 Frontend\n"
	write(t, src, "metrics/pod_frontend-7bc6b4d79c-mg27q_raw.tsv", line)
	if err := Copy(src, dst, Renamed([]string{"frontend", "frontend-proxy", "ad"}, "otel-demo", 1)); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(dst, "metrics"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("%d files, want 1", len(entries))
	}
	name := entries[0].Name()
	if strings.Contains(name, "frontend") {
		t.Errorf("file name %s keeps the old name", name)
	}
	got := strings.Fields(read(t, dst, "metrics/"+name))
	if got[0] != "14:10:18.768475625" {
		t.Errorf("a timestamp became %s", got[0])
	}
	if got[1] != "shop-xxxxx/app"+"bq-1" {
		t.Errorf("namespace/frontend-proxy became %s, want shop-xxxxx/appbq-1", got[1])
	}
	pod := strings.Split(got[2], "-")
	if pod[0]+"-"+pod[1] != "appa-0" {
		t.Errorf("the pod became %s, want one of appa-0", got[2])
	}
	if pod[2] == "7bc6b4d79c" {
		t.Errorf("the pod %s keeps its pod-template hash", got[2])
	}
	if pod[3] == "mg27q" {
		t.Errorf("the pod %s keeps its own suffix", got[2])
	}
	if got[3] != "oteldemo.Appa0Service/Get" {
		t.Errorf("the span name became %s, want oteldemo.Appa0Service/Get (the rest of a word kept)", got[3])
	}
	if got[4] != "frontends" {
		t.Errorf("a longer word became %s", got[4])
	}
	if got[5] != got[6] {
		t.Errorf("one pod renamed two ways: %s and %s", got[5], got[6])
	}
	if got[7] != "Appa0" {
		t.Errorf("a capitalised name became %s, want Appa0", got[7])
	}
	if !strings.HasPrefix(name, "pod_"+got[2]) {
		t.Errorf("file %s and the pod %s it holds renamed apart", name, got[2])
	}
}

// TestRetimedMovesEveryTime: the time in a file's name and in its contents, with or without
// separators, and the metrics' epoch milliseconds.
func TestRetimedMovesEveryTime(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	write(t, src, "alerts/alerts_at_2025-12-15T23-30-49.329092.json", `["2025-12-15 23:30:49.5", "2025-12-15T233049Z", 1765841449000]`)
	if err := Copy(src, dst, Retimed(time.Hour+time.Second)); err != nil {
		t.Fatal(err)
	}
	want := `["2025-12-16 00:30:50.5", "2025-12-16T003050Z", 1765845050000]`
	if got := read(t, dst, "alerts/alerts_at_2025-12-16T00-30-50.329092.json"); got != want {
		t.Errorf("contents %s, want %s", got, want)
	}
}

// TestNoisedAddsOrLeavesOutLines: of a table's records, a share is copied again or left out
// (broken ones left out), the header always kept; other files are untouched.
func TestNoisedAddsOrLeavesOutLines(t *testing.T) {
	src := t.TempDir()
	var b strings.Builder
	b.WriteString("Timestamp\tSpanId\tServiceName\n")
	for range 1000 {
		b.WriteString("2025-12-15 17:24:44.327494932\tf7949bb3317ff83c\tcart\n")
	}
	write(t, src, "otel_traces_raw.tsv", b.String())
	write(t, src, "ground_truth.yaml", "groups: []\n")
	for _, c := range []struct {
		add      bool
		min, max int
	}{{true, 1150, 1250}, {false, 750, 850}} {
		dst := t.TempDir()
		if err := Copy(src, dst, Noised(0.2, c.add, 1)); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(read(t, dst, "otel_traces_raw.tsv"), "\n"), "\n")
		if lines[0] != "Timestamp\tSpanId\tServiceName" {
			t.Errorf("add %v: header %q", c.add, lines[0])
		}
		if n := len(lines) - 1; n < c.min || n > c.max {
			t.Errorf("add %v: %d records of 1000, want %d-%d", c.add, n, c.min, c.max)
		}
		if got := read(t, dst, "ground_truth.yaml"); got != "groups: []\n" {
			t.Errorf("add %v: the ground truth became %q", c.add, got)
		}
	}
}

// TestUncalledLeavesOutOneCall: the spans a callee wrote for one caller are left out; its
// spans for other callers, and the caller's own, are kept.
func TestUncalledLeavesOutOneCall(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	write(t, src, "otel_traces_raw.tsv", "SpanId\tParentSpanId\tServiceName\n"+
		"a1\t\tfrontend\n"+
		"b1\ta1\tcurrency\n"+ // frontend calls currency: left out
		"c1\t\tcheckout\n"+
		"b2\tc1\tcurrency\n"+ // checkout calls currency: kept
		"d1\tb2\tfrontend\n") // currency calls frontend: kept
	if err := Copy(src, dst, Uncalled("frontend", "currency")); err != nil {
		t.Fatal(err)
	}
	got := read(t, dst, "otel_traces_raw.tsv")
	want := "SpanId\tParentSpanId\tServiceName\na1\t\tfrontend\nc1\t\tcheckout\nb2\tc1\tcurrency\nd1\tb2\tfrontend\n"
	if got != want {
		t.Errorf("traces\n%s\nwant\n%s", got, want)
	}
}

// TestRareErrorsLostLeavesOutRareErrorsOnly: error lines and spans whose text is seen at most
// twice are left out; errors seen more often, and rare lines that are no errors, are kept.
func TestRareErrorsLostLeavesOutRareErrorsOnly(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	write(t, src, "otel_logs_raw.tsv", "SeverityText\tBody\n"+
		"ERROR\tdisk full\n"+ // seen once: left out
		"INFO\tstarted\n"+ // no error: kept
		"ERROR\ttimeout\nERROR\ttimeout\nerror\ttimeout\n") // seen three times: kept
	write(t, src, "otel_traces_raw.tsv", "StatusCode\tStatusMessage\n"+
		"Error\trefused\nError\trefused\n"+ // seen twice: left out
		"Unset\t\n")
	if err := Copy(src, dst, RareErrorsLost(2)); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, dst, "otel_logs_raw.tsv"),
		"SeverityText\tBody\nINFO\tstarted\nERROR\ttimeout\nERROR\ttimeout\nerror\ttimeout\n"; got != want {
		t.Errorf("logs\n%s\nwant\n%s", got, want)
	}
	if got, want := read(t, dst, "otel_traces_raw.tsv"), "StatusCode\tStatusMessage\nUnset\t\n"; got != want {
		t.Errorf("traces\n%s\nwant\n%s", got, want)
	}
}

// TestCopyFailsOnAMissingFolder names the folder.
func TestCopyFailsOnAMissingFolder(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone")
	err := Copy(missing, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("error %v, want one naming %s", err, missing)
	}
}

// TestWorkloadsOfATaskWithoutObjects is an error naming the folder.
func TestWorkloadsOfATaskWithoutObjects(t *testing.T) {
	dir := t.TempDir()
	if _, err := Workloads(dir, AppNamespace); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("error %v, want one naming %s", err, dir)
	}
}
