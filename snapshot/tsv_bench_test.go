package snapshot

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// benchData is a 64 MB snapshot-like TSV and its record count, made once.
var benchData = sync.OnceValues(func() ([]byte, int) { return benchTSV(64 << 20) })

// benchTSV writes at least size bytes of records shaped like a snapshot's: mostly trace rows
// of short fields and attribute dicts, and one in five an object dump whose Body is a few KB
// of JSON (quotes doubled), some with line breaks inside, as in k8s_objects_raw.tsv.
func benchTSV(size int) ([]byte, int) {
	rng := rand.New(rand.NewPCG(1, 2))
	var buf bytes.Buffer
	w := NewTSVWriter(&buf)
	w.Write("Timestamp", "TraceId", "SpanId", "ParentSpanId", "SpanName", "ServiceName", "ResourceAttributes",
		"SpanAttributes", "Duration", "StatusCode", "StatusMessage", "Body")
	records := 0
	for buf.Len() < size {
		ts := fmt.Sprintf("2025-12-15 17:%02d:%02d.%09d", rng.IntN(60), rng.IntN(60), rng.IntN(1e9))
		service := [...]string{"frontend", "cart", "checkout", "recommendation", "ad"}[rng.IntN(5)]
		attrs := fmt.Sprintf("{'k8s.namespace.name': 'otel-demo', 'k8s.pod.name': '%s-5f45f75855-%05x', 'service.name': '%s'}", service, rng.IntN(1<<20), service)
		body := ""
		if rng.IntN(5) == 0 {
			var b strings.Builder
			fmt.Fprintf(&b, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s-config","namespace":"otel-demo","uid":"%x"},"data":{`, service, rng.Uint64())
			for i := range 20 + rng.IntN(80) {
				fmt.Fprintf(&b, `"key-%d":"value %x",`, i, rng.Uint64())
			}
			if rng.IntN(4) == 0 {
				b.WriteString("\"script\":\"#!/bin/sh\n\techo \\\"starting\\\"\nexec /app\n\",")
			}
			b.WriteString(`"end":""}}`)
			body = b.String()
		}
		w.Write(ts, fmt.Sprintf("%032x", rng.Uint64()), fmt.Sprintf("%016x", rng.Uint64()), "", "oteldemo.CartService/GetCart",
			service, attrs, "{'rpc.system': 'grpc', 'rpc.grpc.status_code': '0'}", fmt.Sprint(rng.IntN(1e9)), "Unset", "", body)
		records++
	}
	if err := w.Flush(); err != nil {
		panic(err)
	}
	return buf.Bytes(), records
}

func BenchmarkTSVReader(b *testing.B) {
	data, want := benchData()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r := NewTSVReader(bytes.NewReader(data), "bench.tsv")
		if _, err := r.Header(); err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, _, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != want {
			b.Fatalf("%d records, want %d", n, want)
		}
	}
}

// BenchmarkEncodingCSV reads the same data with encoding/csv, set up for the dialect as
// leniently and cheaply as it allows, for comparison.
func BenchmarkEncodingCSV(b *testing.B) {
	data, want := benchData()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r := csv.NewReader(bytes.NewReader(data))
		r.Comma, r.LazyQuotes, r.FieldsPerRecord, r.ReuseRecord = '\t', true, -1, true
		n := -1 // the header
		for {
			_, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != want {
			b.Fatalf("%d records, want %d", n, want)
		}
	}
}
