package wire

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/aa-grade/aa-grade/internal/safefile"
)

// ErrOutsideWorkspace marks a file name that leads out of the workspace (through .. or a link).
var ErrOutsideWorkspace = errors.New("a link out of the working directory")

// FileAnswer is the guest's answer to a file request: the file's bytes, or the error it met,
// with its kind, so that aa-grade can match the error as the guest could.
type FileAnswer struct {
	Data  []byte `json:"data,omitempty"`
	Error string `json:"error,omitempty"`
	Kind  string `json:"kind,omitempty"` // fileNotExist, fileNotRegular, fileTooLarge, fileOutside, or "" for others
}

const (
	fileNotExist   = "not_exist"
	fileNotRegular = "not_regular"
	fileTooLarge   = "too_large"
	fileOutside    = "outside"
)

// FileError is the guest's answer for err, an error it met opening or reading a file.
func FileError(err error) FileAnswer {
	a := FileAnswer{Error: err.Error()}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		a.Kind = fileNotExist
	case errors.Is(err, safefile.ErrNotRegular):
		a.Kind = fileNotRegular
	case errors.Is(err, safefile.ErrTooLarge):
		a.Kind = fileTooLarge
	case strings.Contains(err.Error(), "path escapes from parent"): // os.Root's refusal, not exported
		a.Kind, a.Error = fileOutside, ErrOutsideWorkspace.Error()
	}
	return a
}

// Err turns the answer back into the error the guest met, with the sentinel to match on
// (nil when it met none).
func (a FileAnswer) Err() error {
	var kind error
	switch a.Kind {
	case "":
		if a.Error == "" {
			return nil
		}
		return errors.New(a.Error)
	case fileNotExist:
		kind = fs.ErrNotExist
	case fileNotRegular:
		kind = safefile.ErrNotRegular
	case fileTooLarge:
		kind = safefile.ErrTooLarge
	case fileOutside:
		kind = ErrOutsideWorkspace
	}
	return &guestFileError{msg: a.Error, kind: kind}
}

// guestFileError is an error the guest met on a file, as it described it.
type guestFileError struct {
	msg  string
	kind error
}

func (e *guestFileError) Error() string { return e.msg }
func (e *guestFileError) Unwrap() error { return e.kind }
