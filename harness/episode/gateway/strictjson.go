package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The gateway checks a request (its model, whether it streams, its output cap) with gjson and
// passes the same bytes on; the provider reads them with its own parser. Where two parsers
// read one body differently, what the gateway checked is not what the provider serves: gjson
// takes the first of repeated keys, Python's json and Go's encoding/json the last, Go's
// encoding/json matches a struct's fields whatever their case, and parsers differ on invalid
// UTF-8, lone surrogates, data after the value and very deep nesting. The gateway refuses
// every body where they could differ, rather than forward a canonical re-serialisation of
// what it read: refusing changes no byte of an honest agent's request (its order, numbers and
// spacing, which a provider's prompt cache keys on, stay its own), costs one pass with no
// allocation for most objects, and leaves nothing for a hostile agent to steer, whereas a
// re-serialisation would have to choose, for every parser quirk, which reading wins.

// maxDepth bounds the nesting of a request's arrays and objects: far deeper than any API's
// request (a tool's schema nests a few levels), far shallower than where parsers give up
// (Python's recursion limit near 1000, encoding/json's 10000) or recurse without bound (gjson).
const maxDepth = 256

// errNotStrict is the class of the errors checkStrict returns.
var errNotStrict = errors.New("the request's body must be one JSON object that every JSON parser reads alike")

// checkStrict checks that body is one JSON object (RFC 8259) that every parser reads alike:
// valid UTF-8, no lone surrogate escaped, no key twice in an object once unescaped ("mod\u0065l"
// is "model"), no two top-level keys that differ only in case (as encoding/json matches a
// request's fields), nesting under maxDepth, nothing after the object but white space.
func checkStrict(body []byte) error {
	if !utf8.Valid(body) {
		return fmt.Errorf("%w: invalid UTF-8", errNotStrict)
	}
	s := scanner{b: body}
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return fmt.Errorf("%w: it is not a JSON object", errNotStrict)
	}
	if err := s.value(0); err != nil {
		return fmt.Errorf("%w: %v", errNotStrict, err)
	}
	s.space()
	if s.i < len(s.b) {
		return fmt.Errorf("%w: data after the object at byte %d", errNotStrict, s.i)
	}
	return nil
}

// scanner walks a JSON text once.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// errAt is a syntax error at the scanner's place.
func (s *scanner) errAt(what string) error {
	if s.i >= len(s.b) {
		return fmt.Errorf("%s: the body ends early", what)
	}
	return fmt.Errorf("%s at byte %d", what, s.i)
}

// value reads one value at nesting depth.
func (s *scanner) value(depth int) error {
	s.space()
	if s.i >= len(s.b) {
		return s.errAt("a value is missing")
	}
	switch c := s.b[s.i]; {
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return s.errAt(fmt.Sprintf("nesting deeper than %d levels", maxDepth))
		}
		if c == '{' {
			return s.object(depth + 1)
		}
		return s.array(depth + 1)
	case c == '"':
		_, err := s.str(false)
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
			s.i += len(lit)
			return nil
		}
	}
	return s.errAt("not a JSON value")
}

// object reads an object, its keys checked for repeats.
func (s *scanner) object(depth int) error {
	s.i++ // {
	var keys keySet
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return s.errAt("a key is missing")
		}
		at := s.i
		key, err := s.str(true)
		if err != nil {
			return err
		}
		if keys.add(key, depth == 1) {
			return fmt.Errorf("the key %q at byte %d repeats a key of its object", key, at)
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return s.errAt("a colon is missing")
		}
		s.i++
		if err := s.value(depth); err != nil {
			return err
		}
		if done, err := s.after('}', "object", "brace"); done || err != nil {
			return err
		}
	}
}

// array reads an array.
func (s *scanner) array(depth int) error {
	s.i++ // [
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for {
		if err := s.value(depth); err != nil {
			return err
		}
		if done, err := s.after(']', "array", "bracket"); done || err != nil {
			return err
		}
	}
}

// after reads what follows a member of an object or array: a comma, another member to come,
// or its closing character, done.
func (s *scanner) after(closing byte, container, closer string) (done bool, err error) {
	s.space()
	switch {
	case s.i >= len(s.b):
		return false, s.errAt("the " + container + " is not closed")
	case s.b[s.i] == ',':
		s.i++
		return false, nil
	case s.b[s.i] == closing:
		s.i++
		return true, nil
	}
	return false, s.errAt("a comma or a closing " + closer + " is missing")
}

// str reads a string and, when want is set, returns it unescaped (a key): the body's own
// bytes when it has no escape. The body's UTF-8 was checked whole before.
func (s *scanner) str(want bool) ([]byte, error) {
	s.i++ // "
	start := s.i
	var out []byte // the unescaped text, once an escape came
	for s.i < len(s.b) {
		for s.i < len(s.b) && !stringSpecial[s.b[s.i]] { // the run of plain bytes, most of a string
			s.i++
		}
		if s.i >= len(s.b) {
			break
		}
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			if out == nil {
				return s.b[start : s.i-1], nil
			}
			return out, nil
		case c < 0x20:
			return nil, s.errAt("a control character in a string")
		default: // a backslash
			if want && out == nil {
				out = append([]byte{}, s.b[start:s.i]...)
			}
			r, err := s.escape()
			if err != nil {
				return nil, err
			}
			if want {
				out = utf8.AppendRune(out, r)
			}
		}
		if out != nil {
			plain := s.i
			for s.i < len(s.b) && !stringSpecial[s.b[s.i]] {
				s.i++
			}
			out = append(out, s.b[plain:s.i]...)
		}
	}
	return nil, s.errAt("a string is not closed")
}

// stringSpecial are the bytes that end a run of plain bytes in a string: the quote, the
// backslash and the control characters.
var stringSpecial = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// escape reads an escape, a surrogate pair as one.
func (s *scanner) escape() (rune, error) {
	if s.i+1 >= len(s.b) {
		return 0, s.errAt("an escape is cut")
	}
	s.i += 2
	switch s.b[s.i-1] {
	case '"', '\\', '/':
		return rune(s.b[s.i-1]), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		r, err := s.hex4()
		if err != nil || !utf16.IsSurrogate(r) {
			return r, err
		}
		if r >= 0xDC00 || s.i+1 >= len(s.b) || s.b[s.i] != '\\' || s.b[s.i+1] != 'u' {
			return 0, s.errAt("a lone surrogate escaped")
		}
		s.i += 2
		low, err := s.hex4()
		if err != nil {
			return 0, err
		}
		if pair := utf16.DecodeRune(r, low); pair != utf8.RuneError {
			return pair, nil
		}
		return 0, s.errAt("a lone surrogate escaped")
	}
	s.i--
	return 0, s.errAt("an unknown escape")
}

// hex4 reads the four hex digits of a \u escape.
func (s *scanner) hex4() (rune, error) {
	if s.i+4 > len(s.b) {
		return 0, s.errAt("a \\u escape is cut")
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, s.errAt("a \\u escape is not hexadecimal")
		}
		r = r<<4 | rune(d)
	}
	s.i += 4
	return r, nil
}

// number reads a number as RFC 8259 writes one: no leading zeros, no plus, no lone dot.
func (s *scanner) number() error {
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case !s.digits():
		return s.errAt("a number without digits")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return s.errAt("a number's fraction without digits")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return s.errAt("a number's exponent without digits")
		}
	}
	return nil
}

// digits reads one or more digits; false when there is none.
func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// keySet is the keys of one object so far, each as compared (folded, at the top level): a
// list while it is short (most objects are), kept in the set itself so that it costs no
// allocation, and a map past that, so that an object of a million keys costs no more than its
// length.
type keySet struct {
	small [shortKeys][]byte
	n     int
	set   map[string]struct{}
}

// shortKeys is how many keys a keySet compares one by one before it takes a map.
const shortKeys = 16

// add adds key, folded first where fold is set; it reports whether the set had it already.
func (k *keySet) add(key []byte, fold bool) (seen bool) {
	if fold {
		key = foldCase(key)
	}
	if k.set != nil {
		if _, seen = k.set[string(key)]; !seen {
			k.set[string(key)] = struct{}{}
		}
		return seen
	}
	for _, old := range k.small[:k.n] {
		if bytes.Equal(old, key) {
			return true
		}
	}
	if k.n < shortKeys {
		k.small[k.n] = key
		k.n++
		return false
	}
	k.set = make(map[string]struct{}, 4*shortKeys)
	for _, old := range k.small {
		k.set[string(old)] = struct{}{}
	}
	k.set[string(key)] = struct{}{}
	return false
}

// foldCase is key with each letter replaced by the least of the letters Unicode folds it
// with, so that two keys strings.EqualFold matches (encoding/json's matching, the Kelvin sign
// K included) fold alike.
func foldCase(key []byte) []byte {
	return bytes.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, key)
}
