package snapshot

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Table is the kind of a snapshot TSV file, known from its name.
type Table string

// The tables of a snapshot. Events, objects and logs share the OpenTelemetry log schema.
const (
	Events         Table = "events"          // k8s_events_raw.tsv
	Objects        Table = "objects"         // k8s_objects_raw.tsv
	Logs           Table = "logs"            // otel_logs_raw.tsv
	Traces         Table = "traces"          // otel_traces_raw.tsv
	PodMetrics     Table = "pod_metrics"     // metrics/pod_<pod>_raw.tsv
	ServiceMetrics Table = "service_metrics" // metrics/service_<service>_raw.tsv
)

// TableOf names the table of a TSV file ("" for a file that is not one).
func TableOf(path string) Table {
	base := filepath.Base(path)
	switch base {
	case "k8s_events_raw.tsv":
		return Events
	case "k8s_objects_raw.tsv":
		return Objects
	case "otel_logs_raw.tsv":
		return Logs
	case "otel_traces_raw.tsv":
		return Traces
	}
	if strings.HasSuffix(base, "_raw.tsv") {
		switch {
		case strings.HasPrefix(base, "pod_"):
			return PodMetrics
		case strings.HasPrefix(base, "service_"):
			return ServiceMetrics
		}
	}
	return ""
}

// Columns lists the header of each table, in the order the recorder writes them.
var Columns = map[Table][]string{
	Events: logColumns, Objects: logColumns, Logs: logColumns,
	Traces: {"Timestamp", "TraceId", "SpanId", "ParentSpanId", "TraceState", "SpanName", "SpanKind",
		"ServiceName", "ResourceAttributes", "ScopeName", "ScopeVersion", "SpanAttributes", "Duration",
		"StatusCode", "StatusMessage", "Events.Timestamp", "Events.Name", "Events.Attributes",
		"Links.TraceId", "Links.SpanId", "Links.TraceState", "Links.Attributes"},
	PodMetrics: {"metric_name", "timestamp", "value", "pod_name", "namespace", "tags"},
	ServiceMetrics: {"metric_name", "timestamp", "value", "service_name", "namespace", "bucket_le", "tags", "metric_type",
		"status_code"},
}

var logColumns = []string{"Timestamp", "TimestampTime", "TraceId", "SpanId", "TraceFlags", "SeverityText",
	"SeverityNumber", "ServiceName", "Body", "ResourceSchemaUrl", "ResourceAttributes", "ScopeSchemaUrl",
	"ScopeName", "ScopeVersion", "ScopeAttributes", "LogAttributes", "EventName"}

// Row is one record of a table, read by column name.
type Row struct {
	Line   int // where the record starts in the file
	fields []string
	cols   map[string]int
}

// Get returns a column's value ("" when the record has no such column).
func (r Row) Get(column string) string {
	if i, ok := r.cols[column]; ok && i < len(r.fields) {
		return r.fields[i]
	}
	return ""
}

// Time reads a timestamp column: `2025-12-15 17:24:44.327494932` (UTC, no zone), with any
// number of fractional digits.
func (r Row) Time(column string) (time.Time, bool) {
	return ParseTimestamp(r.Get(column))
}

// ParseTimestamp reads the recorder's timestamps (UTC, space or T, optional fraction).
func ParseTimestamp(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999Z07:00",
		"2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// TableStats summarises one pass over a table.
type TableStats struct {
	Table    Table
	Header   []string       // the columns, as the file names them
	Rows     int            // well-formed records
	BadRows  int            // records reported and skipped
	Problems []*RecordError // the first few broken records
	First    time.Time      // earliest and latest Timestamp seen (zero when none)
	Last     time.Time
}

// maxProblems bounds how many broken records a TableStats keeps (BadRows counts them all).
const maxProblems = 20

// ScanTable reads a snapshot TSV file record by record, calling fn for each well-formed one.
// A record whose field count differs from the header's is counted bad and skipped, as is any
// record the TSV reader reports; neither stops the scan. The error is for the file as a whole
// (unreadable, no header, a required column missing) or one fn returned.
func ScanTable(path string, fn func(Row) error) (*TableStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	table := TableOf(path)
	stats := &TableStats{Table: table}
	r := NewTSVReader(f, path)
	header, err := r.Header()
	if err != nil {
		return stats, err // the reader's error names the file
	}
	stats.Header = header
	cols := make(map[string]int, len(header))
	for i, h := range header {
		cols[h] = i
	}
	for _, want := range requiredColumns(table) {
		if _, ok := cols[want]; !ok {
			return stats, fmt.Errorf("%s: the header has no %s column", path, want)
		}
	}
	timeColumn := "Timestamp"
	if table == PodMetrics || table == ServiceMetrics {
		timeColumn = "timestamp"
	}
	for {
		fields, line, err := r.Next()
		if errors.Is(err, io.EOF) {
			return stats, nil
		}
		var re *RecordError
		if errors.As(err, &re) {
			stats.bad(re)
			continue
		}
		if err != nil {
			return stats, err
		}
		if len(fields) != len(header) {
			stats.bad(&RecordError{File: path, Line: line,
				Err: fmt.Errorf("%d fields, the header has %d", len(fields), len(header))})
			continue
		}
		row := Row{Line: line, fields: fields, cols: cols}
		stats.Rows++
		if t, ok := row.Time(timeColumn); ok {
			if stats.First.IsZero() || t.Before(stats.First) {
				stats.First = t
			}
			if t.After(stats.Last) {
				stats.Last = t
			}
		}
		if fn != nil {
			if err := fn(row); err != nil {
				return stats, err
			}
		}
	}
}

func (s *TableStats) bad(e *RecordError) {
	s.BadRows++
	if len(s.Problems) < maxProblems {
		s.Problems = append(s.Problems, e)
	}
}

// requiredColumns are the columns a table cannot be read without.
func requiredColumns(t Table) []string {
	switch t {
	case Events, Objects, Logs:
		return []string{"Timestamp", "Body"}
	case Traces:
		return []string{"Timestamp", "ServiceName", "SpanName", "StatusCode"}
	case PodMetrics:
		return []string{"metric_name", "timestamp", "value", "pod_name"}
	case ServiceMetrics:
		return []string{"metric_name", "timestamp", "value", "service_name"}
	}
	return nil
}
