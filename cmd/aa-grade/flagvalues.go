package main

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/urfave/cli/v3"
)

// The flag library's errors for a value a flag cannot take, given on the command line
// ("invalid value "x" for flag -parallel: strconv.ParseInt: ...") or by the flag's environment
// variable ("could not parse "abc" as int value from environment variable "AA_GRADE_PARALLEL"
// for flag parallel: ..."). They quote Go's parsers, which tell a user nothing of the fix.
var (
	badFlagValueError     = regexp.MustCompile(`^invalid value ("(?:[^"\\]|\\.)*") for flag -(\S+): `)
	badVariableValueError = regexp.MustCompile(
		`^could not parse ("(?:[^"\\]|\\.)*") as (\S+) value from environment variable "([^"]+)" for flag (\S+): `)
)

// expected says what a flag whose value has the Go type typeName (as %T prints it) takes.
func expected(typeName string) string {
	switch typeName {
	case "int", "int64", "uint", "uint64":
		return "a whole number"
	case "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "time.Duration":
		return "a duration such as 90s or 5m"
	}
	return "another value"
}

// badFlagValue rewords the error for a value a flag of c cannot take as the flag, the value and
// what it takes; "" for any other error.
func badFlagValue(c *cli.Command, err error) string {
	m := badFlagValueError.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	typeName := ""
	for _, f := range c.Flags {
		for _, n := range f.Names() {
			if n == m[2] {
				typeName = fmt.Sprintf("%T", f.Get())
			}
		}
	}
	return fmt.Sprintf("--%s %s: expected %s; see %s --help", m[2], m[1], expected(typeName), c.FullName())
}

// badVariableValue makes the error for an environment variable holding a value its flag cannot
// take a usage error naming the variable, the value, the flag and what it takes; other errors
// are returned as they are. The library returns that error before any command's usage handler
// sees it, so it is caught here, on the way out.
func badVariableValue(err error) error {
	if err == nil {
		return nil
	}
	m := badVariableValueError.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	value, uerr := strconv.Unquote(m[1])
	if uerr != nil {
		value = m[1]
	}
	return usageErrorf("%s=%q: --%s expects %s; fix or unset the variable", m[3], value, m[4], expected(m[2]))
}
