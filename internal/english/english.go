// Package english words counts as people read them, for every message and report: "1 repeat",
// "2 repeats", never "1 repeats".
package english

import "fmt"

// Count is n and noun, the noun plural (with an s) unless n is 1.
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
