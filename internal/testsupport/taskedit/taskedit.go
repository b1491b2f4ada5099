// Package taskedit edits a copy of a task as a dataset author editing a public task would
// (its names replaced, its times moved, lines added or left out), for the tests and the
// measurement of near-duplicate detection (issue 38).
package taskedit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/snapshot"
)

// An Edit changes one file of a task copied: rel is its path in the task folder, and what it
// returns replaces both.
type Edit func(rel string, content []byte) (string, []byte, error)

// Copy copies the task folder src to dst through the edits, in order.
func Copy(src, dst string, edits ...Edit) error {
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		for _, e := range edits {
			if rel, b, err = e(rel, b); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
		}
		to := filepath.Join(dst, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return nil
}

// AppNamespace is the namespace of the application of generated tasks.
const AppNamespace = "otel-demo"

// Workloads are the names of the Deployments, StatefulSets and DaemonSets of the namespace
// in the task folder dir: what Renamed replaces.
func Workloads(dir, namespace string) ([]string, error) {
	seen := map[string]bool{}
	var names []string
	_, err := snapshot.ScanTable(filepath.Join(dir, "k8s_objects_raw.tsv"), func(r snapshot.Row) error {
		o, err := r.Object()
		if err != nil || o.Ref.Namespace != namespace || seen[o.Ref.Name] {
			return nil
		}
		switch o.Ref.Kind {
		case "Deployment", "StatefulSet", "DaemonSet":
			seen[o.Ref.Name] = true
			names = append(names, o.Ref.Name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("workloads of %s: %w", dir, err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no workload in %s", dir, namespace)
	}
	return names, nil
}

// Renamed gives every workload of the application, and its namespace, another name
// everywhere it is written whole (file names, pods, replica sets, alerts, spans, logs, the
// ground truth), as "ProductCatalog" too (and "ProductCatalogService" in span names), and every
// generated name suffix (pod-template hashes and pods' own) another suffix of the alphabet
// Kubernetes draws them from.
func Renamed(services []string, namespace string, seed uint64) Edit {
	r := &renamer{to: map[string]string{namespace: "shop-" + strings.Repeat("x", 1+len(namespace)%5)},
		camel: map[string]string{}, hashes: map[string]string{}, rng: rand.New(rand.NewPCG(seed, 38))}
	for i, s := range services {
		n := fmt.Sprintf("app%c%s-%d", 'a'+rune(i%26), strings.Repeat("q", i%4), i)
		r.to[s], r.camel[camelCase(s)], r.camel[camelCase(s)+"Service"] = n, camelCase(n), camelCase(n)+"Service"
	}
	return func(rel string, b []byte) (string, []byte, error) {
		dir, file := filepath.Split(rel)
		if kind, name, ok := strings.Cut(file, "_"); ok && strings.HasSuffix(name, "_raw.tsv") {
			file = kind + "_" + r.rename(strings.TrimSuffix(name, "_raw.tsv")) + "_raw.tsv"
		}
		return dir + file, []byte(r.rename(string(b))), nil
	}
}

type renamer struct {
	to, camel, hashes map[string]string
	rng               *rand.Rand
}

// rename renames each word of s: a run of letters, digits and dashes.
func (r *renamer) rename(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		i := strings.IndexFunc(s, isWordChar)
		if i < 0 {
			break
		}
		b.WriteString(s[:i])
		s = s[i:]
		j := strings.IndexFunc(s, func(c rune) bool { return !isWordChar(c) })
		if j < 0 {
			j = len(s)
		}
		b.WriteString(r.word(s[:j]))
		s = s[j:]
	}
	b.WriteString(s)
	return b.String()
}

func isWordChar(c rune) bool {
	return c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// word renames the names among a word's dash-separated parts (the longest run of parts that
// is one first), and each part after a name that is a generated suffix.
func (r *renamer) word(w string) string {
	if c, ok := r.camel[w]; ok {
		return c
	}
	parts := strings.Split(w, "-")
	var out []string
	named := false
	for i := 0; i < len(parts); i++ {
		n := len(parts)
		for ; n > i; n-- {
			if to, ok := r.to[strings.Join(parts[i:n], "-")]; ok {
				out, named = append(out, to), true
				break
			}
		}
		switch {
		case n > i:
			i = n - 1
		case named:
			out = append(out, r.hash(parts[i]))
		default:
			out = append(out, parts[i])
		}
	}
	return strings.Join(out, "-")
}

// hash is another generated suffix for one (five to ten of Kubernetes' letters, a digit
// among them), always the same; any other part is kept.
func (r *renamer) hash(p string) string {
	if len(p) < 5 || len(p) > 10 || strings.Trim(p, k8sLetters) != "" || !strings.ContainsAny(p, "2456789") {
		return p
	}
	if h, ok := r.hashes[p]; ok {
		return h
	}
	b := make([]byte, len(p))
	for i := range b {
		b[i] = k8sLetters[r.rng.IntN(len(k8sLetters))]
	}
	r.hashes[p] = string(b)
	return r.hashes[p]
}

const k8sLetters = "bcdfghjklmnpqrstvwxz2456789"

func camelCase(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

var (
	dateTime = regexp.MustCompile(`(\d{4}-\d\d-\d\d)([T _])(\d\d)([:-]?)(\d\d)([:-]?)(\d\d)`)
	epochMS  = regexp.MustCompile(`\b1[67]\d{11}\b`)
)

// Retimed moves every time in a file and its name by d (the date-times to the second, which
// keeps their fractions, with or without separators in the time of day, and the metrics'
// epoch milliseconds): the same incident recorded at another time.
func Retimed(d time.Duration) Edit {
	shift := func(s string) string {
		s = dateTime.ReplaceAllStringFunc(s, func(m string) string {
			p := dateTime.FindStringSubmatch(m)
			t, err := time.Parse("2006-01-02 15 04 05", p[1]+" "+p[3]+" "+p[5]+" "+p[7])
			if err != nil {
				return m
			}
			t = t.Add(d)
			return t.Format("2006-01-02") + p[2] + t.Format("15") + p[4] + t.Format("04") + p[6] + t.Format("05")
		})
		return epochMS.ReplaceAllStringFunc(s, func(m string) string {
			ms, _ := strconv.ParseInt(m, 10, 64) // the pattern is digits that fit
			return strconv.FormatInt(ms+d.Milliseconds(), 10)
		})
	}
	return func(rel string, b []byte) (string, []byte, error) {
		return shift(rel), []byte(shift(string(b))), nil
	}
}

// Noised edits the log, span and event lines: with add, a share of them copied once more a
// few seconds later (a span with a span id of its own), else that share left out.
func Noised(share float64, add bool, seed uint64) Edit {
	rng := rand.New(rand.NewPCG(seed, 380))
	return func(rel string, b []byte) (string, []byte, error) {
		switch snapshot.TableOf(rel) {
		case snapshot.Logs, snapshot.Traces, snapshot.Events:
		default:
			return rel, b, nil
		}
		out, err := rewrite(rel, b, func(header, fields []string) [][]string {
			switch touched := rng.Float64() < share; {
			case !touched:
				return [][]string{fields}
			case add:
				return [][]string{fields, echo(header, fields, rng)}
			default:
				return nil
			}
		})
		return rel, out, err
	}
}

// Uncalled leaves out the spans callee wrote when called by caller: a copy that lost a call
// of its call graph, as one stripped of lines loses a call seen only a few times.
func Uncalled(caller, callee string) Edit {
	return func(rel string, b []byte) (string, []byte, error) {
		if snapshot.TableOf(rel) != snapshot.Traces {
			return rel, b, nil
		}
		writer := map[string]string{} // span id -> the service that wrote it
		if _, err := rewrite(rel, b, func(header, fields []string) [][]string {
			writer[column(header, fields, "SpanId")] = column(header, fields, "ServiceName")
			return nil
		}); err != nil {
			return rel, nil, err
		}
		out, err := rewrite(rel, b, func(header, fields []string) [][]string {
			if column(header, fields, "ServiceName") == callee &&
				writer[column(header, fields, "ParentSpanId")] == caller {
				return nil
			}
			return [][]string{fields}
		})
		return rel, out, err
	}
}

// column is the field of a record under the header's column name, "" when it has none.
func column(header, fields []string, name string) string {
	if i := slices.Index(header, name); i >= 0 && i < len(fields) {
		return fields[i]
	}
	return ""
}

// RareErrorsLost leaves out the error log lines and error spans whose text (a line's body, a
// span's status message) the task has at most most times: what a copy stripped of lines loses
// first, and in a task with few errors most of what tells its errors apart.
func RareErrorsLost(most int) Edit {
	return func(rel string, b []byte) (string, []byte, error) {
		var level, want, text string
		switch snapshot.TableOf(rel) {
		case snapshot.Logs:
			level, want, text = "SeverityText", "ERROR", "Body"
		case snapshot.Traces:
			level, want, text = "StatusCode", "ERROR", "StatusMessage"
		default:
			return rel, b, nil
		}
		errorText := func(header, fields []string) (string, bool) {
			return column(header, fields, text), strings.EqualFold(column(header, fields, level), want)
		}
		seen := map[string]int{}
		if _, err := rewrite(rel, b, func(header, fields []string) [][]string {
			if t, isError := errorText(header, fields); isError {
				seen[t]++
			}
			return nil
		}); err != nil {
			return rel, nil, err
		}
		out, err := rewrite(rel, b, func(header, fields []string) [][]string {
			if t, isError := errorText(header, fields); isError && seen[t] <= most {
				return nil
			}
			return [][]string{fields}
		})
		return rel, out, err
	}
}

// RarestCall is the call of the task in dir seen least often, from two sightings (caller,
// callee): the call a copy stripped of lines loses first, for Uncalled.
func RarestCall(dir string) ([2]string, error) {
	g := snapshot.NewCallGraph()
	if _, err := snapshot.ScanTable(filepath.Join(dir, "otel_traces_raw.tsv"), func(r snapshot.Row) error {
		g.Add(r)
		return nil
	}); err != nil {
		return [2]string{}, fmt.Errorf("calls of %s: %w", dir, err)
	}
	var rarest [2]string
	least := 0
	counts := g.Counts()
	for _, c := range g.Calls() {
		if n := counts[c]; n >= 2 && (least == 0 || n < least) {
			rarest, least = c, n
		}
	}
	if least == 0 {
		return rarest, fmt.Errorf("%s: no call seen twice", dir)
	}
	return rarest, nil
}

// rewrite writes the table b again, each record replaced by what each returns for it (none,
// itself, or more); a broken record is left out, as a reader skips it.
func rewrite(rel string, b []byte, each func(header, fields []string) [][]string) ([]byte, error) {
	in := snapshot.NewTSVReader(bytes.NewReader(b), rel)
	header, err := in.Header()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	w := snapshot.NewTSVWriter(&out)
	if err := w.Write(header...); err != nil {
		return nil, err
	}
	for {
		fields, _, err := in.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if _, broken := errors.AsType[*snapshot.RecordError](err); broken {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, rec := range each(header, fields) {
			if err := w.Write(rec...); err != nil {
				return nil, err
			}
		}
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// echo is a copy of a record a few seconds later, with a span id of its own.
func echo(header, fields []string, rng *rand.Rand) []string {
	out := slices.Clone(fields)
	for i, col := range header {
		switch col {
		case "Timestamp":
			if t, ok := snapshot.ParseTimestamp(out[i]); ok {
				out[i] = t.Add(time.Duration(1+rng.IntN(20)) * time.Second).Format("2006-01-02 15:04:05.000000000")
			}
		case "SpanId":
			if out[i] != "" {
				out[i] = fmt.Sprintf("%016x", rng.Uint64())
			}
		}
	}
	return out
}
