package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
)

// MaxRecordBytes bounds one record, raw bytes with quotes and line end. Whole Kubernetes objects
// make records of megabytes; past this a file is broken, and the reader skips the record rather
// than hold it in memory.
const MaxRecordBytes = 256 << 20

// readBufferSize is the initial read buffer; it grows to hold the largest record. 4 MiB read
// fastest: refills are rare, and garbage collections (paced by the live heap, which the buffer
// is most of) fewer than with 1 MiB, for a few MiB more.
const readBufferSize = 4 << 20

// ErrUnterminatedQuote is the cause of a RecordError for a file that ends inside a quoted field.
var ErrUnterminatedQuote = errors.New("the file ends inside a quoted field")

// ErrRecordTooLarge is the cause of a RecordError for a record larger than MaxRecordBytes.
var ErrRecordTooLarge = errors.New("record too large")

// RecordError is a broken record. It does not stop the reader: the next call to Next goes on
// with the record after it, so one damaged row does not cost a whole file.
type RecordError struct {
	File string
	Line int // where the record starts, 1-based
	Err  error
}

func (e *RecordError) Error() string { return fmt.Sprintf("%s line %d: %v", e.File, e.Line, e.Err) }

func (e *RecordError) Unwrap() error { return e.Err }

// TSVReader streams the records of a pandas `to_csv(sep="\t")` file. Fields hold tabs,
// newlines and quotes (log bodies, status messages, whole Kubernetes objects), so the file
// cannot be split into lines; and it is read as Python's csv module reads it (leniently), since
// that is what the files were made for.
//
// The dialect: records end with "\n" or "\r\n" (any other "\r" is text); fields are separated
// by tabs; a field that starts with `"` is quoted up to the next `"` that is not doubled, `""`
// inside standing for one quote, and whatever follows the closing quote up to the separator is
// kept literally; a `"` elsewhere is literal. Text inside quotes is kept byte for byte. The
// field count may differ between records. Blank lines are skipped, as pandas.read_csv does
// (pandas writes an empty one-field record as `""`), and counted in line numbers.
//
// Memory is bounded by the largest record, not by the file: input is read in large chunks into
// one buffer that is reused and grows only to hold a record that does not fit.
type TSVReader struct {
	src  io.Reader
	file string

	buf        []byte // made by the first read
	start, end int    // buffered input not yet returned is buf[start:end]
	srcErr     error  // from src, once it has failed or ended (io.EOF)
	maxRecord  int    // MaxRecordBytes; lowered by tests
	line       int    // where the next record starts

	header     []string
	headerErr  error
	headerRead bool

	fields []string    // the last record, reused
	bounds []fieldSpan // the fields of the record being parsed so far
	cur    cursor      // where its parsing stands
}

// fieldSpan is the content of a field, buf[start:end] relative to the record start.
type fieldSpan struct{ start, end int }

// cursor is where the parsing of a record stands, kept when the buffered input ends inside it
// so that parsing goes on from there once more is read. Offsets are relative to the record
// start. A quoted field is unquoted in place as it is scanned: after its first doubled quote,
// its content is moved left over one quote of each pair, so that a field is one piece of the
// buffer and the record one string.
type cursor struct {
	state  scanState
	field  int  // where the current field starts (at its opening quote if quoted)
	quoted bool // the current field is quoted
	read   int  // in quotes: the next byte to read; in unquoted text: where that text starts
	write  int  // a quoted field: where its content written so far ends
	lines  int  // line breaks in the fields done so far, and the record's line end
}

// scanState is what the parser reads next.
type scanState uint8

const (
	atFieldStart  scanState = iota
	inUnquoted              // an unquoted field, or the text after a closing quote
	inQuoted                // inside quotes
	quoteInQuoted           // after a quote inside quotes: the closing one unless another follows
)

// NewTSVReader reads r; file names it in errors.
func NewTSVReader(r io.Reader, file string) *TSVReader {
	return &TSVReader{src: r, file: file, maxRecord: MaxRecordBytes, line: 1}
}

// Header returns the first record, the column names, reading it on the first call. A file
// without any record gives an error wrapping io.EOF.
func (r *TSVReader) Header() ([]string, error) {
	if !r.headerRead {
		r.headerRead = true
		fields, _, err := r.next()
		switch {
		case err == io.EOF:
			r.headerErr = fmt.Errorf("%s: no header, the file is empty: %w", r.file, io.EOF)
		case err != nil:
			r.headerErr = err
		default:
			r.header = append([]string(nil), fields...)
		}
	}
	return r.header, r.headerErr
}

// Next returns the next record after the header (reading the header first if Header was not
// called) and the line it starts on, 1-based (the header is line 1). At the end it returns
// io.EOF. A broken record gives a *RecordError and the following call continues after it.
//
// The returned slice is reused by the next call; the strings are not (they share one
// allocation per record: copy one with strings.Clone to keep it apart from a large record).
func (r *TSVReader) Next() (fields []string, line int, err error) {
	if !r.headerRead {
		if _, err := r.Header(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, 0, io.EOF
			}
			return nil, 0, err
		}
	}
	return r.next()
}

func (r *TSVReader) next() ([]string, int, error) {
	for {
		if r.start == r.end {
			if r.srcErr != nil {
				return nil, 0, r.endError()
			}
			r.fill()
			continue
		}
		data := r.buf[r.start:r.end]
		n, ok := r.parse(data, r.srcErr == io.EOF)
		line := r.line
		if !ok {
			switch {
			case r.srcErr == io.EOF:
				err := fmt.Errorf("%w (field %d)", ErrUnterminatedQuote, len(r.bounds)+1)
				r.start = r.end
				r.resetRecord()
				return nil, 0, &RecordError{File: r.file, Line: line, Err: err}
			case r.srcErr != nil:
				return nil, 0, r.endError()
			case len(data) >= r.maxRecord:
				r.skip(data)
				return nil, 0, &RecordError{File: r.file, Line: line, Err: r.tooLarge()}
			}
			r.fill()
			continue
		}
		r.line += r.cur.lines
		r.start += n
		fields := r.bounds
		r.resetRecord()
		if n > r.maxRecord {
			return nil, 0, &RecordError{File: r.file, Line: line, Err: r.tooLarge()}
		}
		if len(fields) == 1 && fields[0].start == fields[0].end && data[0] != '"' {
			continue // a blank line
		}
		return r.record(data, fields), line, nil
	}
}

// resetRecord gets ready for the next record.
func (r *TSVReader) resetRecord() {
	r.bounds = r.bounds[:0]
	r.cur = cursor{}
}

// endError is io.EOF at the end of the input, or the read error with the file name.
func (r *TSVReader) endError() error {
	if r.srcErr == io.EOF {
		return io.EOF
	}
	return fmt.Errorf("%s: %w", r.file, r.srcErr)
}

func (r *TSVReader) tooLarge() error {
	return fmt.Errorf("%w: more than %d bytes", ErrRecordTooLarge, r.maxRecord)
}

// parse goes on with the record at the start of data from r.cur: it returns its length with
// the line end once it has all its fields in r.bounds, or ok=false if data ends first and more
// input may follow (atEOF says none does). Separators and quotes are found by scanTo, many
// bytes at a time rather than byte by byte; the line end is searched once for all the unquoted
// fields before it.
func (r *TSVReader) parse(data []byte, atEOF bool) (n int, ok bool) {
	c, bounds := r.cur, r.bounds // in locals (registers) while parsing
	defer func() { r.cur, r.bounds = c, bounds }()
	nl, hasNL := -1, false // the next line end at or after c.read, once searched
	for {
		switch c.state {
		case atFieldStart:
			if c.field == len(data) && !atEOF {
				return 0, false
			}
			c.quoted = c.field < len(data) && data[c.field] == '"'
			if c.quoted {
				c.read, c.write, c.state = c.field+1, c.field+1, inQuoted
			} else {
				c.read, c.state = c.field, inUnquoted
			}
		case inQuoted:
			read, write := c.read, c.write
			for { // through the doubled quotes, in registers
				var found bool
				if read, write, found = scanTo(data, read, write, '"'); !found {
					c.read, c.write = read, write
					return 0, false
				}
				read++
				if read == len(data) || data[read] != '"' {
					break
				}
				data[write] = '"'
				write++
				read++
			}
			c.read, c.write, c.state = read, write, quoteInQuoted
			fallthrough
		case quoteInQuoted:
			if c.read == len(data) && !atEOF {
				return 0, false
			}
			if c.read < len(data) && data[c.read] == '"' {
				data[c.write] = '"'
				c.write++
				c.read++
				c.state = inQuoted
				continue
			}
			c.lines += bytes.Count(data[c.field+1:c.write], []byte{'\n'})
			c.state = inUnquoted // the text after the closing quote
			fallthrough
		case inUnquoted:
			if nl < c.read {
				if i := bytes.IndexByte(data[c.read:], '\n'); i >= 0 {
					nl, hasNL = c.read+i, true
				} else {
					nl, hasNL = len(data), false
				}
			}
			end, _, sep := scanTo(data[:nl], c.read, c.read, '\t')
			switch {
			case sep:
			case !hasNL && !atEOF:
				return 0, false
			case hasNL && end > c.read && data[end-1] == '\r':
				end--
			}
			if c.quoted {
				c.write += copy(data[c.write:], data[c.read:end])
				bounds = append(bounds, fieldSpan{c.field + 1, c.write})
			} else {
				bounds = append(bounds, fieldSpan{c.field, end})
			}
			if !sep {
				if hasNL {
					c.lines++
					return nl + 1, true
				}
				return nl, true
			}
			c.field, c.state = end+1, atFieldStart
		}
	}
}

// scanTo finds the next c in data from read, and moves the text before it to write, where
// write <= read (in a quoted field, the text moves left once a doubled quote has been met;
// elsewhere write is read). It returns the position of c and where the moved text ends, or
// found=false with the positions reached at the end of data.
//
// Quotes in JSON come every ten bytes or so and most unquoted fields are short, where a call
// to bytes.IndexByte costs more than its scan and a call to copy more than its move: the next
// 32 bytes are looked at (and moved) 8 at a time first, the bytes equal to c in v being the
// zero bytes of v^(c*lo) (as in "Bit Twiddling Hacks": the lowest one flagged is exact).
func scanTo(data []byte, read, write int, c byte) (int, int, bool) {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	cs := lo * uint64(c)
	for stop := read + 32; read < stop && read+8 <= len(data); read, write = read+8, write+8 {
		v := binary.LittleEndian.Uint64(data[read:])
		if x := v ^ cs; (x-lo)&^x&hi != 0 {
			i := bits.TrailingZeros64((x-lo)&^x&hi) / 8
			if write < read {
				copy(data[write:write+i], data[read:read+i])
			}
			return read + i, write + i, true
		}
		if write < read {
			binary.LittleEndian.PutUint64(data[write:], v)
		}
	}
	i := bytes.IndexByte(data[read:], c)
	if i < 0 {
		i = len(data) - read
	}
	if write < read {
		copy(data[write:], data[read:read+i])
	}
	return read + i, write + i, read+i < len(data)
}

// record makes the fields of the record parsed from data: one string for the whole record,
// the fields being substrings of it.
func (r *TSVReader) record(data []byte, bounds []fieldSpan) []string {
	s := string(data[:bounds[len(bounds)-1].end])
	r.fields = r.fields[:0]
	for _, f := range bounds {
		r.fields = append(r.fields, s[f.start:f.end])
	}
	return r.fields
}

// fill reads more input after the record being parsed, moving it to the start of the buffer,
// or into a larger one if it fills the buffer. It reads until the buffer is full, so that the
// unquoted text the parser looks at again after a refill is looked at a few times at most
// whatever its size.
func (r *TSVReader) fill() {
	if r.buf == nil {
		r.buf = make([]byte, firstBufferSize(r.src))
	}
	if r.start > 0 {
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
	}
	if r.end == len(r.buf) {
		grown := make([]byte, min(2*len(r.buf), r.maxRecord))
		copy(grown, r.buf[:r.end])
		r.buf = grown
	}
	for empty := 0; r.end < len(r.buf) && r.srcErr == nil; {
		n, err := r.src.Read(r.buf[r.end:])
		r.end += n
		if err != nil {
			r.srcErr = err
		} else if n > 0 {
			empty = 0
		} else if empty++; empty == 100 {
			r.srcErr = io.ErrNoProgress
		}
	}
}

// firstBufferSize is readBufferSize, or less for a smaller file (snapshots have many small
// metrics files, which may be read at the same time): its size and one byte to see the end.
func firstBufferSize(src io.Reader) int {
	if f, ok := src.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if info, err := f.Stat(); err == nil && info.Mode().IsRegular() && info.Size() < readBufferSize {
			return int(info.Size()) + 1
		}
	}
	return readBufferSize
}

// skip discards a record too large to hold, of which data is the part buffered, counting its
// lines. It goes on byte by byte (a rare error path) from where the parser stopped, following
// the same rules, to the end of the record.
func (r *TSVReader) skip(data []byte) {
	c := r.cur
	r.line += c.lines
	if c.quoted && c.state >= inQuoted {
		r.line += bytes.Count(data[c.field+1:c.write], []byte{'\n'}) + bytes.Count(data[c.read:], []byte{'\n'})
	}
	state := c.state
	r.resetRecord()
	r.start = r.end
	for {
		for i, b := range r.buf[r.start:r.end] {
			if b == '\n' {
				r.line++
			}
			switch state {
			case inQuoted:
				if b == '"' {
					state = quoteInQuoted
				}
				continue
			case quoteInQuoted, atFieldStart:
				if b == '"' {
					state = inQuoted
					continue
				}
			}
			switch b {
			case '\t':
				state = atFieldStart
			case '\n':
				r.start += i + 1
				return
			default:
				state = inUnquoted
			}
		}
		r.start = r.end
		if r.srcErr != nil {
			return
		}
		r.fill()
	}
}
