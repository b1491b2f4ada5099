package runfolder

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// The line readers of the run folder's JSON Lines files (results.jsonl, the trajectories),
// bounded: a damaged or hostile file cannot make a reader hold a line past its limit.

// skipLine reads past the next newline without keeping anything; io.EOF when there is none.
func skipLine(r *bufio.Reader) error {
	for {
		_, err := r.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// nextLine reads the next line of r without its newline; whole says it ended with one. A line
// longer than limit is not kept: its error is errLong, and the reader is past it. io.EOF
// comes after the last line.
func nextLine(r *bufio.Reader, limit int, errLong error) (line []byte, whole bool, err error) {
	long := false
	for {
		chunk, err := r.ReadSlice('\n')
		if long || len(line)+len(chunk) > limit {
			long, line = true, nil
		} else {
			line = append(line, chunk...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) == 0 && !long:
			return nil, false, io.EOF
		case err != nil && !errors.Is(err, io.EOF):
			return nil, false, err
		}
		whole = err == nil
		if long {
			return nil, whole, errLong
		}
		return bytes.TrimSuffix(line, []byte("\n")), whole, nil
	}
}
