package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/urfave/cli/v3"
)

// unknownFlagPrefix starts the flag package's error for a flag a command does not have.
const unknownFlagPrefix = "flag provided but not defined: "

// unknownFlag rewords the flag library's error for a flag c does not have ("flag provided
// but not defined: -bogus", one dash whatever was typed) as the flag was typed, with a near
// flag of c if there is one and where the flags are listed; "" for any other error.
func unknownFlag(c *cli.Command, err error) string {
	given, ok := strings.CutPrefix(err.Error(), unknownFlagPrefix)
	if !ok {
		return ""
	}
	name := strings.TrimLeft(given, "-")
	var names []string
	for _, f := range c.Flags {
		names = append(names, f.Names()...)
	}
	hint := ""
	if s := closest(name, names); s != "" {
		hint = " (did you mean --" + s + "?)"
	}
	return fmt.Sprintf("unknown flag %s%s; see %s --help", typedFlag(c.Root().Args().Slice(), name), hint, c.FullName())
}

// typedFlag is flag name as the command line spells it (-name, --name), from args, the words
// after the program's name; --name when it is not found there.
func typedFlag(args []string, name string) string {
	for _, a := range args {
		if a == "--" {
			break
		}
		bare := strings.TrimLeft(a, "-")
		if bare != a && (bare == name || strings.HasPrefix(bare, name+"=")) {
			return a[:len(a)-len(bare)] + name
		}
	}
	return "--" + name
}

// requiredFlags matches the flag library's error for required flags not given.
var requiredFlags = regexp.MustCompile(`^Required flags? "(.+)" not set$`)

// missingFlags rewords the flag library's error for required flags not given ("Required flag
// "out" not set") as flags are written ("--out is required"); "" for any other error.
func missingFlags(err error) string {
	m := requiredFlags.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	names := strings.Split(m[1], ", ")
	for i, n := range names {
		names[i] = "--" + n
	}
	if len(names) == 1 {
		return names[0] + " is required"
	}
	return strings.Join(names, " and ") + " are required"
}

// didYouMean is " (did you mean x?)" when a candidate is close to name, or "".
func didYouMean(name string, candidates []string) string {
	if s := closest(name, candidates); s != "" {
		return " (did you mean " + s + "?)"
	}
	return ""
}

// commandNames are the visible sub-commands of c.
func commandNames(c *cli.Command) []string {
	var names []string
	for _, sub := range c.Commands {
		if !sub.Hidden {
			names = append(names, sub.Name)
		}
	}
	return names
}

// closest is the candidate nearest to name by edit distance, if it is near enough to be a
// typo (at most a third of the name's letters wrong, at least one) or name is a prefix of it;
// "" otherwise, so that a word unlike any command suggests nothing.
func closest(name string, candidates []string) string {
	best, bestDistance := "", -1
	for _, c := range candidates {
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		if len(name) >= 2 && strings.HasPrefix(c, name) {
			d = 1
		}
		if d <= max(1, len(name)/3) && (bestDistance < 0 || d < bestDistance) {
			best, bestDistance = c, d
		}
	}
	return best
}

// editDistance is the Damerau-Levenshtein distance (optimal string alignment) of a and b: the
// insertions, deletions, substitutions and swaps of neighbours that turn one into the other.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
