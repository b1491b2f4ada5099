package snapshot

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxPyDepth bounds the nesting of a Python literal: deeper input is refused rather than
// recursed into, so no input can exhaust the stack.
const maxPyDepth = 512

// pySpace is the whitespace Python allows between tokens.
const pySpace = " \t\n\r\f\v"

// pyEscapes are the one-letter escapes of Python strings, standing for pyEscaped.
const (
	pyEscapes = "\\'\"abfnrtv"
	pyEscaped = "\\'\"\a\b\f\n\r\t\v"
)

// PyLiteralError is a Python literal that cannot be read, with the byte offset of the problem.
type PyLiteralError struct {
	Offset int
	Msg    string
}

func (e *PyLiteralError) Error() string {
	return fmt.Sprintf("python literal: offset %d: %s", e.Offset, e.Msg)
}

// ParsePyLiteral reads the repr of a Python value, as the recorder wrote the attribute columns
// (`ResourceAttributes`, `SpanAttributes`, metric `tags`, `Events.Attributes`...): what
// Python's ast.literal_eval accepts for dicts, lists, tuples, strings, numbers, True, False and
// None. A dict gives map[string]any (a key that is not a string is rendered as its source
// text, which for a repr is Python's own rendering), a list or tuple []any, a string string,
// an int int64 (float64 if it does not fit), a float float64, True and False bool, None nil.
//
// Strings take single or double quotes and Python's escapes; an unknown escape is kept with
// its backslash, as Python does (so is \N{...}, which needs the Unicode name table).
// Nesting deeper than 512 is an error.
func ParsePyLiteral(s string) (any, error) {
	p := pyParser{s: s}
	p.space()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if p.space(); p.pos < len(s) {
		return nil, p.errorf("unexpected %q after the value", p.s[p.pos])
	}
	return v, nil
}

// ParsePyDict reads the repr of a Python dict, as ParsePyLiteral does; an empty string (an
// empty column) gives an empty map, as "{}" does.
func ParsePyDict(s string) (map[string]any, error) {
	if strings.Trim(s, pySpace) == "" {
		return map[string]any{}, nil
	}
	v, err := ParsePyLiteral(s)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &PyLiteralError{Offset: len(s) - len(strings.TrimLeft(s, pySpace)), Msg: "not a dict"}
	}
	return m, nil
}

type pyParser struct {
	s     string
	pos   int
	depth int
}

func (p *pyParser) errorf(format string, args ...any) error {
	return &PyLiteralError{Offset: p.pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *pyParser) space() {
	for p.pos < len(p.s) && strings.IndexByte(pySpace, p.s[p.pos]) >= 0 {
		p.pos++
	}
}

func (p *pyParser) value() (any, error) {
	if p.pos == len(p.s) {
		return nil, p.errorf("unexpected end, expected a value")
	}
	switch c := p.s[p.pos]; {
	case c == '{':
		return p.dict()
	case c == '[':
		return p.sequence(']')
	case c == '(':
		return p.sequence(')')
	case c == '\'' || c == '"':
		return p.str()
	case c == '-' || c == '+' || c == '.' || '0' <= c && c <= '9':
		return p.number()
	}
	for _, w := range [...]struct {
		name  string
		value any
	}{{"True", true}, {"False", false}, {"None", nil}} {
		if strings.HasPrefix(p.s[p.pos:], w.name) && !isNameByte(p.s, p.pos+len(w.name)) {
			p.pos += len(w.name)
			return w.value, nil
		}
	}
	end := p.pos + 1 // the unexpected name, or character
	for isNameByte(p.s, p.pos) && isNameByte(p.s, end) {
		end++
	}
	return nil, p.errorf("unexpected %q, expected a value", p.s[p.pos:end])
}

// isNameByte says whether s[i] continues a Python name (false past the end).
func isNameByte(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	c := s[i]
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= utf8.RuneSelf
}

// enter and leave count the nesting of containers.
func (p *pyParser) enter() error {
	if p.depth++; p.depth > maxPyDepth {
		return p.errorf("nested deeper than %d", maxPyDepth)
	}
	p.pos++ // the opening bracket
	return nil
}

func (p *pyParser) leave() {
	p.depth--
	p.pos++ // the closing bracket
}

func (p *pyParser) dict() (map[string]any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	m := map[string]any{}
	for {
		if p.space(); p.pos < len(p.s) && p.s[p.pos] == '}' {
			p.leave()
			return m, nil
		}
		start := p.pos
		k, err := p.value()
		if err != nil {
			return nil, err
		}
		key, ok := k.(string)
		if !ok {
			key = p.s[start:p.pos]
		}
		if p.space(); p.pos == len(p.s) || p.s[p.pos] != ':' {
			return nil, p.errorf("expected ':' after a dict key")
		}
		p.pos++
		p.space()
		if m[key], err = p.value(); err != nil {
			return nil, err
		}
		if _, err := p.comma('}'); err != nil {
			return nil, err
		}
	}
}

// sequence reads a list, or a tuple; a parenthesised value without a comma is the value
// itself, as in Python.
func (p *pyParser) sequence(closing byte) (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	items := []any{}
	comma := false
	for {
		if p.space(); p.pos < len(p.s) && p.s[p.pos] == closing {
			p.leave()
			if closing == ')' && len(items) == 1 && !comma {
				return items[0], nil
			}
			return items, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		if comma, err = p.comma(closing); err != nil {
			return nil, err
		}
	}
}

// comma reads the comma after an item, saying whether there was one: before the closing
// bracket it is optional.
func (p *pyParser) comma(closing byte) (bool, error) {
	p.space()
	switch {
	case p.pos < len(p.s) && p.s[p.pos] == ',':
		p.pos++
		return true, nil
	case p.pos < len(p.s) && p.s[p.pos] == closing:
		return false, nil
	}
	return false, p.errorf("expected ',' or '%c'", closing)
}

func (p *pyParser) str() (string, error) {
	quote := p.s[p.pos]
	start := p.pos
	p.pos++
	rest := p.s[p.pos:]
	end := strings.IndexByte(rest, quote)
	if end >= 0 && strings.IndexByte(rest[:end], '\\') < 0 { // the usual case: no escapes
		p.pos += end + 1
		return rest[:end], nil
	}
	stops := `'\`
	if quote == '"' {
		stops = `"\`
	}
	var b strings.Builder
	for {
		i := strings.IndexAny(p.s[p.pos:], stops)
		if i < 0 {
			p.pos = start
			return "", p.errorf("unterminated string")
		}
		b.WriteString(p.s[p.pos : p.pos+i])
		p.pos += i
		if p.s[p.pos] == quote {
			p.pos++
			return b.String(), nil
		}
		if err := p.escape(&b); err != nil {
			return "", err
		}
	}
}

// escape reads the escape sequence at p.pos (a backslash) into b.
func (p *pyParser) escape(b *strings.Builder) error {
	if p.pos+1 == len(p.s) {
		return p.errorf("unterminated string")
	}
	c := p.s[p.pos+1]
	p.pos += 2
	if c == '\n' { // a line continuation
		return nil
	}
	if i := strings.IndexByte(pyEscapes, c); i >= 0 {
		b.WriteByte(pyEscaped[i])
		return nil
	}
	digits, base := 0, 16
	switch c {
	case 'x':
		digits = 2
	case 'u':
		digits = 4
	case 'U':
		digits = 8
	case '0', '1', '2', '3', '4', '5', '6', '7':
		p.pos-- // the first digit
		base = 8
		for digits < 3 && p.pos+digits < len(p.s) && '0' <= p.s[p.pos+digits] && p.s[p.pos+digits] <= '7' {
			digits++
		}
	default:
		b.WriteByte('\\')
		b.WriteByte(c)
		return nil
	}
	if p.pos+digits > len(p.s) {
		p.pos -= 2
		return p.errorf("truncated \\%c escape", c)
	}
	v, err := strconv.ParseUint(p.s[p.pos:p.pos+digits], base, 32)
	if err != nil || v > utf8.MaxRune {
		p.pos -= 2
		return p.errorf("invalid \\%c escape", c)
	}
	p.pos += digits
	b.WriteRune(rune(v))
	return nil
}

func (p *pyParser) number() (any, error) {
	start := p.pos
	digits := func() {
		for p.pos < len(p.s) && '0' <= p.s[p.pos] && p.s[p.pos] <= '9' {
			p.pos++
		}
	}
	sign := func() {
		if p.pos < len(p.s) && (p.s[p.pos] == '-' || p.s[p.pos] == '+') {
			p.pos++
		}
	}
	sign()
	digits()
	float := false
	if p.pos < len(p.s) && p.s[p.pos] == '.' {
		float = true
		p.pos++
		digits()
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'e' || p.s[p.pos] == 'E') {
		float = true
		p.pos++
		sign()
		digits()
	}
	text := p.s[start:p.pos]
	if !float {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(text, 64) // out of range: ±Inf, as Python has it
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		p.pos = start
		return nil, p.errorf("invalid number %q", text)
	}
	return f, nil
}
