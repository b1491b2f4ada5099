package settings

import (
	"fmt"
	"time"
)

// Duration is a time.Duration that run.json holds as Go writes durations ("5m0s"), as it
// always has: one type from the flag to the file and back, where a time.Duration would be
// written as nanoseconds.
type Duration time.Duration

// String is the duration as Go writes it ("5m0s"); a resume's refusal names it so.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes the duration as String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a duration as time.ParseDuration does; "" is 0, as a header written
// without one meant.
func (d *Duration) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return fmt.Errorf("read a duration: %w", err)
	}
	*d = Duration(v)
	return nil
}
