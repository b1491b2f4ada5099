package settings

import (
	"errors"
	"fmt"
)

// Loop names the agent loop an episode follows (docs/fidelity.md).
type Loop string

const (
	// LoopReference is Stirrup 0.1.9's loop, request for request: the default, and the only
	// loop whose scores compare with the leaderboard.
	LoopReference Loop = "reference"
	// LoopLenient is aa-grade's earlier loop, kept as an alternative: the finish call runs
	// last, a reply cut at the output cap is used as it is, an overflowing context is
	// summarised, warnings come from the first turn and the nudge comes with them, finish is
	// refused until agent_output.json reads as a diagnosis, and the history is summarised
	// against a context window instead of the output cap.
	LoopLenient Loop = "lenient"
)

// Loops lists the loops, the default first.
var Loops = []Loop{LoopReference, LoopLenient}

// ErrUnknownLoop marks a loop name that is none of Loops.
var ErrUnknownLoop = errors.New("unknown loop")

// ParseLoop reads a loop's name; "" is the reference loop.
func ParseLoop(name string) (Loop, error) {
	if name == "" {
		return LoopReference, nil
	}
	for _, l := range Loops {
		if string(l) == name {
			return l, nil
		}
	}
	return "", fmt.Errorf("%w %q (expected %s or %s)", ErrUnknownLoop, name, LoopReference, LoopLenient)
}
