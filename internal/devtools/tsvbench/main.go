// Command tsvbench measures snapshot.TSVReader against encoding/csv and Python's csv module,
// each reading the same large pandas-dialect TSV in a process of its own (the Go readers by
// running this program again), with throughput and peak resident memory, at two file sizes
// to show that memory does not grow with the file. The file is written by Python's csv module
// as pandas writes it, so the three must also agree on its record count.
//
//	go run ./internal/devtools/tsvbench -size-mb 200
package main

import (
	"bufio"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/internal/devtools/benchproc"
	"github.com/aa-grade/aa-grade/snapshot"
)

// generate writes at least argv[2] bytes of snapshot-like records to argv[1] with the csv
// module as pandas `to_csv(sep="\t")` does, and prints how many: mostly trace rows of short
// fields and attribute dicts, some with a multi-line status message, and one in five an object
// dump whose Body is a few KB of JSON (one in four pretty-printed, so with line breaks).
const generate = `
import csv, json, random, sys
path, size = sys.argv[1], int(sys.argv[2])
rng = random.Random(1)
services = ['frontend', 'cart', 'checkout', 'recommendation', 'ad']
rows = []
for i in range(2000):
    svc = rng.choice(services)
    attrs = {'k8s.namespace.name': 'otel-demo', 'k8s.pod.name': '%s-5f45f75855-%05x' % (svc, rng.getrandbits(20)),
             'service.name': svc}
    status = ''
    if rng.random() < 0.05:
        status = 'RPC terminated with:\n\tstatus = StatusCode.DEADLINE_EXCEEDED\n\tdetails = "Deadline Exceeded"\n'
    body = ''
    if rng.random() < 0.2:
        data = {'key-%d' % k: 'value %x' % rng.getrandbits(64) for k in range(rng.randint(20, 99))}
        obj = {'apiVersion': 'v1', 'kind': 'ConfigMap',
               'metadata': {'name': svc + '-config', 'namespace': 'otel-demo', 'uid': '%x' % rng.getrandbits(64)},
               'data': data}
        body = json.dumps(obj, indent=1) if rng.random() < 0.25 else json.dumps(obj, separators=(',', ':'))
    rows.append(['2025-12-15 17:%02d:%02d.%09d' % (rng.randrange(60), rng.randrange(60), rng.randrange(10**9)),
                 '%032x' % rng.getrandbits(128), '%016x' % rng.getrandbits(64), '', 'oteldemo.CartService/GetCart', svc,
                 repr(attrs), repr({'rpc.system': 'grpc', 'rpc.grpc.status_code': '0'}), rng.randrange(10**9),
                 'Error' if status else 'Unset', status, body])
n = 0
with open(path, 'w', newline='', encoding='utf-8') as f:
    w = csv.writer(f, delimiter='\t', lineterminator='\n')
    w.writerow(['Timestamp', 'TraceId', 'SpanId', 'ParentSpanId', 'SpanName', 'ServiceName', 'ResourceAttributes',
                'SpanAttributes', 'Duration', 'StatusCode', 'StatusMessage', 'Body'])
    while f.tell() < size:
        w.writerows(rows)
        n += len(rows)
print(n)
`

// pythonCount counts the records of argv[1] with the csv module.
const pythonCount = `
import csv, sys
csv.field_size_limit(sys.maxsize)
with open(sys.argv[1], newline='', encoding='utf-8') as f:
    r = csv.reader(f, delimiter='\t')
    next(r)
    print(sum(1 for _ in r))
`

func main() {
	sizeMB := flag.Int("size-mb", 200, "size of the larger file, MB (10^6 bytes); the other is a quarter of it")
	runs := flag.Int("runs", 3, "runs of each reader; the median time is reported")
	read := flag.String("read", "", "internal: count the records of -file with this Go reader (tsvreader or csv)")
	file := flag.String("file", "", "internal: the file for -read")
	flag.Parse()
	if *read != "" {
		n, err := count(*read, *file)
		if err != nil {
			fail(err)
		}
		fmt.Println(n)
		return
	}
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	dir, err := os.MkdirTemp("", "tsvbench")
	if err != nil {
		fail(err)
	}
	defer func() { _ = os.RemoveAll(dir) }() // in the temporary folder, the system's to clean if it stays
	for _, size := range []int{*sizeMB * 1e6, *sizeMB * 1e6 / 4} {
		path := filepath.Join(dir, fmt.Sprintf("bench-%d.tsv", size))
		out, err := exec.Command("python3", "-c", generate, path, strconv.Itoa(size)).Output()
		if err != nil {
			fail(fmt.Errorf("python3 writing the file: %w", err))
		}
		records := strings.TrimSpace(string(out))
		info, err := os.Stat(path)
		if err != nil {
			fail(err)
		}
		mb := float64(info.Size()) / 1e6
		fmt.Printf("%.0f MB, %s records (written by Python's csv module), median of %d runs:\n", mb, records, *runs)
		for _, reader := range []struct {
			name string
			args []string
		}{
			{"snapshot.TSVReader", []string{self, "-read", "tsvreader", "-file", path}},
			{"encoding/csv", []string{self, "-read", "csv", "-file", path}},
			{"python3 csv module", []string{"python3", "-c", pythonCount, path}},
		} {
			wall, rss := measure(*runs, reader.name, reader.args, records)
			fmt.Printf("  %-20s %6.2f s  %7.1f MB/s  peak RSS %6.1f MiB\n", reader.name, wall.Seconds(), mb/wall.Seconds(),
				float64(rss)/1024)
		}
		if err := os.Remove(path); err != nil { // a file of sizeMB each
			fail(err)
		}
	}
}

// count reads a file to the end with one of the Go readers and returns its record count.
func count(reader, path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // read only
	n := 0
	switch reader {
	case "tsvreader":
		r := snapshot.NewTSVReader(f, path)
		if _, err := r.Header(); err != nil {
			return 0, err
		}
		for ; ; n++ {
			if _, _, err := r.Next(); err == io.EOF {
				return n, nil
			} else if err != nil {
				return n, err
			}
		}
	case "csv":
		// Set up for the dialect as leniently and cheaply as it allows, with the same 4 MiB of
		// read buffer as TSVReader.
		r := csv.NewReader(bufio.NewReaderSize(f, 4<<20))
		r.Comma, r.LazyQuotes, r.FieldsPerRecord, r.ReuseRecord = '\t', true, -1, true
		for n = -1; ; n++ { // not counting the header
			if _, err := r.Read(); err == io.EOF {
				return n, nil
			} else if err != nil {
				return n, err
			}
		}
	}
	return 0, fmt.Errorf("unknown reader %q", reader)
}

// measure runs a reader process several times and returns the median wall time and the largest
// peak resident memory (KiB). Each run must print the expected record count.
func measure(runs int, name string, args []string, records string) (time.Duration, int64) {
	var walls []time.Duration
	var rss int64
	for range runs {
		cmd := exec.Command(args[0], args[1:]...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		sample, err := benchproc.Run(cmd)
		rss = max(rss, sample.PeakKiB)
		walls = append(walls, sample.Wall)
		if err != nil {
			fail(fmt.Errorf("%s: %w", name, err))
		}
		if got := strings.TrimSpace(out.String()); got != records {
			fail(fmt.Errorf("%s read %s records, want %s", name, got, records))
		}
	}
	slices.Sort(walls)
	return walls[len(walls)/2], rss
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "tsvbench:", err)
	os.Exit(1)
}
