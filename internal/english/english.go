// Package english words counts as people read them, for every message and report: "1 repeat",
// "2 repeats", never "1 repeats"; "1,234,567" tokens.
package english

import (
	"fmt"
	"strconv"
	"strings"
)

// Count is n and noun, the noun plural (with an s) unless n is 1.
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Number is n with its thousands apart, as people read large counts (tokens): 1,234,567.
func Number(n int64) string {
	digits := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, digits = "-", digits[1:]
	}
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return sign + b.String()
}
