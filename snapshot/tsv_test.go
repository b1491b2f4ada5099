package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/aa-grade/aa-grade/internal/testsupport/shareddata"
)

// result is one answer of TSVReader.Next: a record, or the text of a RecordError.
type result struct {
	Line   int
	Fields []string
	Err    string
}

func (r result) String() string { return fmt.Sprintf("{line %d %q %q}", r.Line, r.Fields, r.Err) }

// readAll reads the header and every record up to io.EOF, or up to an error other than a
// RecordError (which it returns, as it does one reading the header).
func readAll(r *TSVReader) (header []string, got []result, err error) {
	if header, err = r.Header(); err != nil {
		return nil, nil, err
	}
	for {
		fields, line, err := r.Next()
		var re *RecordError
		switch {
		case err == io.EOF:
			return header, got, nil
		case errors.As(err, &re):
			got = append(got, result{Line: re.Line, Err: re.Error()})
		case err != nil:
			return header, got, err
		default:
			got = append(got, result{Line: line, Fields: append([]string(nil), fields...)})
		}
	}
}

// newTestReader reads s with an initial buffer of bufSize bytes (0: the default), so that
// small sizes cut records, fields, quote pairs and line ends at every place.
func newTestReader(s string, bufSize int) *TSVReader {
	r := NewTSVReader(strings.NewReader(s), "f.tsv")
	if bufSize > 0 {
		r.buf = make([]byte, bufSize)
	}
	return r
}

var dialectCases = []struct {
	name   string
	in     string
	header []string
	want   []result
}{
	{"plain", "x\ty\na\tb\nc\td\n", []string{"x", "y"},
		[]result{{2, []string{"a", "b"}, ""}, {3, []string{"c", "d"}, ""}}},
	{"quoted tab", "h\n\"a\tb\"\tc\n", []string{"h"},
		[]result{{2, []string{"a\tb", "c"}, ""}}},
	{"quoted newlines, line numbers", "h\n\"a\nb\nc\"\td\ne\n\"\n\"\n", []string{"h"},
		[]result{{2, []string{"a\nb\nc", "d"}, ""}, {5, []string{"e"}, ""}, {6, []string{"\n"}, ""}}},
	{"doubled quotes", "h\n\"say \"\"hi\"\"\"\t\"\"\"\"\t\"\"\"\"\"\"\n", []string{"h"},
		[]result{{2, []string{`say "hi"`, `"`, `""`}, ""}}},
	{"empty fields", "h\n\t\t\n", []string{"h"},
		[]result{{2, []string{"", "", ""}, ""}}},
	{"trailing empty field", "h\na\t\n", []string{"h"},
		[]result{{2, []string{"a", ""}, ""}}},
	{"quoted empty fields", "h\n\"\"\t\"\"\n\"\"\n", []string{"h"},
		[]result{{2, []string{"", ""}, ""}, {3, []string{""}, ""}}},
	{"variable field count", "a\tb\tc\n1\n1\t2\t3\t4\n\t\n", []string{"a", "b", "c"},
		[]result{{2, []string{"1"}, ""}, {3, []string{"1", "2", "3", "4"}, ""}, {4, []string{"", ""}, ""}}},
	{"CRLF", "x\ty\r\na\tb\r\n\"q\"\r\n\"c\r\nd\"\te\r\n", []string{"x", "y"},
		[]result{{2, []string{"a", "b"}, ""}, {3, []string{"q"}, ""}, {4, []string{"c\r\nd", "e"}, ""}}},
	{"CR kept unless before the line end", "h\na\rb\tc\r\r\n\r\r\n", []string{"h"},
		[]result{{2, []string{"a\rb", "c\r"}, ""}, {3, []string{"\r"}, ""}}},
	{"no final line end", "h\na\tb", []string{"h"},
		[]result{{2, []string{"a", "b"}, ""}}},
	{"no final line end after a quote", "h\n\"a\"\"b\"", []string{"h"},
		[]result{{2, []string{`a"b`}, ""}}},
	{"no final line end after a tab", "h\na\t", []string{"h"},
		[]result{{2, []string{"a", ""}, ""}}},
	{"blank lines skipped", "h\n\na\n\r\n\nb\n\n", []string{"h"},
		[]result{{3, []string{"a"}, ""}, {6, []string{"b"}, ""}}},
	{"quote inside an unquoted field is literal", "h\na\"b\tc\"\t\"\"x\"\n", []string{"h"},
		[]result{{2, []string{`a"b`, `c"`, `x"`}, ""}}},
	{"text after a closing quote is literal", "h\n\"ab\"cd\t\"a\"b\"c\t\"x\"\"\"y\"\"\t\"\"z\r\n", []string{"h"},
		[]result{{2, []string{"abcd", `ab"c`, `x"y""`, "z"}, ""}}},
	{"header spanning lines", "\"a\nb\"\tc\nx\ty\n", []string{"a\nb", "c"},
		[]result{{3, []string{"x", "y"}, ""}}},
	{"header only", "h\n", []string{"h"}, nil},
	{"end of file inside quotes", "h\na\n\"abc\nd", []string{"h"},
		[]result{{2, []string{"a"}, ""}, {3, nil, "f.tsv line 3: the file ends inside a quoted field (field 1)"}}},
	{"end of file inside quotes of a later field", "h\n1\t2\t\"x\ny", []string{"h"},
		[]result{{2, nil, "f.tsv line 2: the file ends inside a quoted field (field 3)"}}},
	{"end of file after a doubled quote", "h\n\"a\"\"", []string{"h"},
		[]result{{2, nil, "f.tsv line 2: the file ends inside a quoted field (field 1)"}}},
}

func TestTSVReaderDialect(t *testing.T) {
	for _, tc := range dialectCases {
		for _, bufSize := range []int{0, 1, 2, 3, 7} {
			t.Run(fmt.Sprintf("%s/buffer %d", tc.name, bufSize), func(t *testing.T) {
				header, got, err := readAll(newTestReader(tc.in, bufSize))
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(header, tc.header) {
					t.Errorf("header %q, want %q", header, tc.header)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("got  %q\nwant %q", got, tc.want)
				}
			})
		}
	}
}

func TestTSVReaderEmptyFile(t *testing.T) {
	r := newTestReader("", 0)
	if _, err := r.Header(); !errors.Is(err, io.EOF) || !strings.HasPrefix(err.Error(), "f.tsv: ") {
		t.Errorf("Header: %v, want an error naming the file and wrapping io.EOF", err)
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Errorf("Next: %v, want io.EOF", err)
	}
	if _, _, err := newTestReader("\n\n", 0).Next(); err != io.EOF {
		t.Errorf("Next on blank lines: %v, want io.EOF", err)
	}
}

// wantNext checks one answer of Next, its error, line and fields each their own failure, and
// stops the test when one is wrong.
func wantNext(t *testing.T, fields []string, line int, err error, wantFields []string, wantLine int) {
	t.Helper()
	if err != nil {
		t.Errorf("Next: %v", err)
	}
	if line != wantLine {
		t.Errorf("Next: line %d, want %d", line, wantLine)
	}
	if !reflect.DeepEqual(fields, wantFields) {
		t.Errorf("Next: %q, want %q", fields, wantFields)
	}
	if t.Failed() {
		t.FailNow()
	}
}

func TestTSVReaderNextReadsTheHeader(t *testing.T) {
	r := newTestReader("h\na\n", 0)
	fields, line, err := r.Next()
	wantNext(t, fields, line, err, []string{"a"}, 2)
	if header, err := r.Header(); err != nil || !reflect.DeepEqual(header, []string{"h"}) {
		t.Errorf("Header = %q, %v; want [h]", header, err)
	}
}

func TestTSVReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := NewTSVReader(io.MultiReader(strings.NewReader("h\na\nb"), iotest.ErrReader(boom)), "f.tsv")
	fields, line, err := r.Next()
	wantNext(t, fields, line, err, []string{"a"}, 2)
	for range 2 { // the error stays
		if _, _, err := r.Next(); !errors.Is(err, boom) || err.Error() != "f.tsv: boom" {
			t.Errorf("Next: %v, want f.tsv: boom", err)
		}
	}
}

func TestTSVReaderLargeField(t *testing.T) {
	var b strings.Builder
	for b.Len() < 30<<20 {
		b.WriteString("{\"key\": \"a value\twith a tab\"}\n")
	}
	big := b.String()
	quoted := `"` + strings.ReplaceAll(big, `"`, `""`) + `"`
	in := "h1\th2\th3\na\t" + quoted + "\tz\nlast\t1\n"
	// HalfReader returns half of what is asked: refills of every size.
	r := NewTSVReader(iotest.HalfReader(strings.NewReader(in)), "big.tsv")
	if _, err := r.Header(); err != nil {
		t.Fatal(err)
	}
	fields, line, err := r.Next()
	if err != nil {
		t.Errorf("record 1: %v", err)
	}
	if line != 2 {
		t.Errorf("record 1: line %d, want 2", line)
	}
	if len(fields) != 3 {
		t.Fatalf("record 1: %d fields, want 3", len(fields))
	}
	if fields[0] != "a" || fields[2] != "z" {
		t.Errorf("record 1: fields 1 and 3 are %q and %q, want a and z", fields[0], fields[2])
	}
	if fields[1] != big {
		t.Errorf("record 1: the 30 MB field is %d bytes, want it intact (%d bytes)", len(fields[1]), len(big))
	}
	if t.Failed() {
		t.FailNow()
	}
	fields, line, err = r.Next()
	wantNext(t, fields, line, err, []string{"last", "1"}, 3+strings.Count(big, "\n"))
	if _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("then %v, want io.EOF", err)
	}
}

func TestTSVReaderRecordTooLarge(t *testing.T) {
	long := strings.Repeat("x", 100)
	in := "h\nok\t1\n" +
		"\"" + strings.Repeat("a\"\"\tb\nc", 20) + "\"\tafter\n" + // lines 3 to 23
		"next\t2\n" +
		long + "\t\"" + long + "\"\n" +
		"\"" + long + "\"x\"\t\"\n\"\n" +
		"\"a\nb\nc\"\t" + long + "\n" + // too large after a quoted field on three lines
		"end\n"
	want := []result{
		{2, []string{"ok", "1"}, ""},
		{3, nil, "f.tsv line 3: record too large: more than 64 bytes"},
		{24, []string{"next", "2"}, ""},
		{25, nil, "f.tsv line 25: record too large: more than 64 bytes"},
		{26, nil, "f.tsv line 26: record too large: more than 64 bytes"},
		{28, nil, "f.tsv line 28: record too large: more than 64 bytes"},
		{31, []string{"end"}, ""},
	}
	// A small buffer reaches the limit before the record ends (the record is skipped as it is
	// read); the default one holds it whole (it is refused once read).
	for _, bufSize := range []int{0, 8} {
		r := newTestReader(in, bufSize)
		r.maxRecord = 64
		if _, got, err := readAll(r); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("buffer %d:\ngot  %q, %v\nwant %q", bufSize, got, err, want)
		}
	}
	var re *RecordError
	r := newTestReader("h\n"+long+"\n", 8)
	r.maxRecord = 64
	_, _, err := r.Next()
	if !errors.As(err, &re) {
		t.Fatalf("Next: %#v, want a RecordError", err)
	}
	if !errors.Is(err, ErrRecordTooLarge) {
		t.Errorf("Next: %v, want it wrapping ErrRecordTooLarge", err)
	}
	if re.File != "f.tsv" || re.Line != 2 {
		t.Errorf("Next: a RecordError for %s line %d, want f.tsv line 2", re.File, re.Line)
	}
}

// fragment opens one of the real snapshot heads kept beside the project.
func fragment(t *testing.T, rel string) (*TSVReader, string) {
	t.Helper()
	path := filepath.Join(shareddata.Dir(t), "snapshot-fragments", "Scenario-2", rel)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return NewTSVReader(f, path), path
}

func TestTSVReaderRealFragments(t *testing.T) {
	t.Run("events", func(t *testing.T) {
		r, path := fragment(t, "k8s_events_raw.tsv.HEAD-FRAGMENT")
		header, got, err := readAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if info, err := os.Stat(path); err != nil {
			t.Error(err)
		} else if len(r.buf) != int(info.Size())+1 {
			t.Errorf("a %d-byte buffer for a %d-byte file, want its size and one byte", len(r.buf), info.Size())
		}
		want := strings.Fields("Timestamp TimestampTime TraceId SpanId TraceFlags SeverityText SeverityNumber ServiceName Body ResourceSchemaUrl ResourceAttributes ScopeSchemaUrl ScopeName ScopeVersion ScopeAttributes LogAttributes EventName")
		if !reflect.DeepEqual(header, want) {
			t.Fatalf("header %q, want %q", header, want)
		}
		if len(got) != 2 {
			t.Fatalf("%d records, want 2: %q", len(got), got)
		}
		for i, rec := range got {
			if rec.Line != i+2 {
				t.Errorf("record %d: line %d, want %d", i, rec.Line, i+2)
			}
			if len(rec.Fields) != 17 {
				t.Fatalf("record %d: %d fields, want 17", i, len(rec.Fields))
			}
			body := rec.Fields[8]
			if !json.Valid([]byte(body)) {
				t.Errorf("record %d: Body is not JSON: %.80s...", i, body)
			}
			if !strings.HasPrefix(body, `{"object":{"apiVersion":`) {
				t.Errorf("record %d: Body does not start as the unquoted event: %.80s...", i, body)
			}
			if !strings.HasSuffix(body, `"type":"ADDED"}`) {
				t.Errorf("record %d: Body does not end as the unquoted event: ...%s", i, body[max(0, len(body)-80):])
			}
		}
		for _, c := range []struct {
			record, field int
			want          string
		}{{0, 0, "2025-12-15 17:24:44.327494932"}, {1, 10, "{'k8s.namespace.name': 'ingress-nginx'}"}, {1, 16, ""}} {
			if got := got[c.record].Fields[c.field]; got != c.want {
				t.Errorf("record %d, field %d: %q, want %q", c.record+1, c.field+1, got, c.want)
			}
		}
	})
	t.Run("metrics", func(t *testing.T) {
		r, _ := fragment(t, filepath.Join("metrics", "service_frontend-proxy_raw.tsv.HEAD-FRAGMENT"))
		header, got, err := readAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.Fields("metric_name timestamp value service_name namespace bucket_le tags metric_type status_code"); !reflect.DeepEqual(header, want) {
			t.Fatalf("header %q, want %q", header, want)
		}
		if len(got) != 5 {
			t.Fatalf("%d records, want 5", len(got))
		}
		for i, rec := range got {
			if rec.Line != i+2 {
				t.Errorf("record %d: line %d, want %d", i, rec.Line, i+2)
			}
			if len(rec.Fields) != 9 {
				t.Errorf("record %d: %d fields, want 9: %q", i, len(rec.Fields), rec.Fields)
			} else if name := rec.Fields[0]; name != "traces_span_metrics_duration_milliseconds_bucket" && name != "duration_p95" {
				t.Errorf("record %d: metric %q, want traces_span_metrics_duration_milliseconds_bucket or duration_p95", i, name)
			}
		}
		f := got[0].Fields
		for i, want := range map[int]string{1: "2025-12-15 17:25:02.949", 2: "2064.0", 3: "frontend-proxy", 5: "10.0"} {
			if f[i] != want {
				t.Errorf("record 1, field %d: %q, want %q", i+1, f[i], want)
			}
		}
	})
	t.Run("traces cut inside a quoted field", func(t *testing.T) {
		r, path := fragment(t, "otel_traces_raw.tsv.HEAD-FRAGMENT")
		header, err := r.Header()
		if err != nil {
			t.Fatal(err)
		}
		if len(header) != 22 {
			t.Fatalf("%d columns, want the 22 trace columns: %q", len(header), header)
		}
		for i, want := range map[int]string{0: "Timestamp", 14: "StatusMessage", 21: "Links.Attributes"} {
			if header[i] != want {
				t.Errorf("column %d: %q, want %q", i+1, header[i], want)
			}
		}
		if t.Failed() {
			t.FailNow()
		}

		_, _, err = r.Next()
		var re *RecordError
		if !errors.As(err, &re) {
			t.Fatalf("Next: %v; want a RecordError", err)
		}
		if re.File != path || re.Line != 2 {
			t.Errorf("Next: a RecordError for %s line %d, want %s line 2", re.File, re.Line, path)
		}
		if !errors.Is(err, ErrUnterminatedQuote) {
			t.Errorf("Next: %v, want it wrapping ErrUnterminatedQuote", err)
		}
		if want := path + " line 2: the file ends inside a quoted field (field 15)"; err.Error() != want {
			t.Errorf("Next: %v, want %s", err, want)
		}
		if t.Failed() {
			t.FailNow()
		}
		if _, _, err := r.Next(); err != io.EOF {
			t.Errorf("then %v, want io.EOF", err)
		}
	})
}

// FuzzTSVReader checks that any input is read without a panic, the same whatever the buffer
// size, that a record limit only turns records into errors on the same lines, and that
// records written by TSVWriter (the pandas dialect) read back unchanged.
func FuzzTSVReader(f *testing.F) {
	for _, tc := range dialectCases {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte("a\x1fb\x1ec\td\x1f\"e\"\"\"\x1f\r\x1e\x1e\n\x1f"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := string(data)
		header, want, err := readAll(newTestReader(s, len(s)+1)) // read at once
		line := 1
		for _, rec := range want {
			if rec.Line <= line {
				t.Fatalf("line %d after line %d", rec.Line, line)
			}
			line = rec.Line
		}
		header1, got, err1 := readAll(newTestReader(s, 1))
		if !reflect.DeepEqual(header1, header) {
			t.Errorf("buffer 1 byte: header %q, want %q", header1, header)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("buffer 1 byte: records\n%q\nwant\n%q", got, want)
		}
		if fmt.Sprint(err1) != fmt.Sprint(err) {
			t.Errorf("buffer 1 byte: error %v, want %v", err1, err)
		}
		if t.Failed() {
			t.FailNow()
		}
		r := newTestReader(s, 4)
		r.maxRecord = 16
		headerLimited, limited, errLimited := readAll(r)
		if errors.Is(errLimited, ErrRecordTooLarge) {
			return // the header itself is too large
		}
		if !reflect.DeepEqual(headerLimited, header) {
			t.Errorf("with a record limit: header %q, want %q", headerLimited, header)
		}
		if len(limited) != len(want) {
			t.Errorf("with a record limit: %d records, want %d:\n%q\nwant\n%q", len(limited), len(want), limited, want)
		}
		if fmt.Sprint(errLimited) != fmt.Sprint(err) {
			t.Errorf("with a record limit: error %v, want %v", errLimited, err)
		}
		if t.Failed() {
			t.FailNow()
		}

		for i, got := range limited {
			tooLarge := strings.Contains(got.Err, ErrRecordTooLarge.Error())
			if got.Line != want[i].Line || !tooLarge && !reflect.DeepEqual(got, want[i]) {
				t.Fatalf("with a record limit, answer %d: %q, want %q", i, got, want[i])
			}
		}

		// Records from the input, \x1e ending a record and \x1f a field, written and read back.
		var buf bytes.Buffer
		w := NewTSVWriter(&buf)
		w.Write("h")
		var records []result
		line = 1
		for _, rec := range strings.Split(s, "\x1e") {
			fields := strings.Split(rec, "\x1f")
			w.Write(fields...)
			line++
			records = append(records, result{Line: line, Fields: fields})
			line += strings.Count(rec, "\n")
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, got, err := readAll(newTestReader(buf.String(), 16)); err != nil || !reflect.DeepEqual(got, records) {
			t.Fatalf("read back:\ngot  %q, %v\nwant %q", got, err, records)
		}
	})
}
