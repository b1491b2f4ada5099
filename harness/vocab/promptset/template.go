package promptset

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// A template is the text of one prompt-set key: literal text with `{{name}}` placeholders and
// `{{if name}}...{{else}}...{{end}}` sections, which keep their first part when the variable
// is not empty and their `{{else}}` part (optional) when it is. That is the whole language: it
// is enough to say only what is true of an episode's sandbox, every word stays in the file,
// and rendering cannot fail once the text has parsed, so a bad prompt file is refused before
// a run starts rather than in the middle of an episode.
type template []node

// node is literal text (name empty), a placeholder, or, when cond is set, an if section.
type node struct {
	text      string
	name      string
	cond      bool
	then, alt template
}

// templateError is a problem in a template, at a byte offset of its text (for line numbers).
type templateError struct {
	offset int
	msg    string
}

func (e *templateError) Error() string { return e.msg }

var variableName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// parseTemplate reads a template whose placeholders must all be among allowed.
func parseTemplate(text string, allowed map[string]bool) (template, error) {
	p := templateParser{text: text, allowed: allowed}
	t, end, err := p.parse()
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, &templateError{p.tagAt, "{{" + end + "}} without {{if}}"}
	}
	return t, nil
}

// templateParser reads a template from its text, tag by tag.
type templateParser struct {
	text    string
	pos     int
	tagAt   int // offset of the last tag read
	allowed map[string]bool
}

// parse reads nodes up to the end of the text or to an `else` or `end` tag, which it returns.
func (p *templateParser) parse() (template, string, error) {
	var t template
	for p.pos < len(p.text) {
		open := strings.Index(p.text[p.pos:], "{{")
		if open < 0 {
			t = append(t, node{text: p.text[p.pos:]})
			p.pos = len(p.text)
			break
		}
		if open > 0 {
			t = append(t, node{text: p.text[p.pos : p.pos+open]})
		}
		p.tagAt = p.pos + open
		closing := strings.Index(p.text[p.tagAt:], "}}")
		if closing < 0 {
			return nil, "", &templateError{p.tagAt, "{{ without }}"}
		}
		tag := strings.TrimSpace(p.text[p.tagAt+2 : p.tagAt+closing])
		p.pos = p.tagAt + closing + 2
		switch {
		case tag == "else" || tag == "end":
			return t, tag, nil
		case strings.HasPrefix(tag, "if "):
			n, err := p.section(strings.TrimSpace(strings.TrimPrefix(tag, "if ")))
			if err != nil {
				return nil, "", err
			}
			t = append(t, n)
		default:
			if err := p.check(tag); err != nil {
				return nil, "", err
			}
			t = append(t, node{name: tag})
		}
	}
	return t, "", nil
}

// section reads the rest of an `{{if name}}` section, up to its `{{end}}`.
func (p *templateParser) section(name string) (node, error) {
	if err := p.check(name); err != nil {
		return node{}, err
	}
	at := p.tagAt
	n := node{name: name, cond: true}
	var end string
	var err error
	if n.then, end, err = p.parse(); err != nil {
		return node{}, err
	}
	if end == "else" {
		if n.alt, end, err = p.parse(); err != nil {
			return node{}, err
		}
		if end == "else" {
			return node{}, &templateError{p.tagAt, "a second {{else}} in {{if " + name + "}}"}
		}
	}
	if end != "end" {
		return node{}, &templateError{at, "{{if " + name + "}} without {{end}}"}
	}
	return n, nil
}

// check refuses a variable the key does not have.
func (p *templateParser) check(name string) error {
	if !variableName.MatchString(name) {
		return &templateError{p.tagAt, fmt.Sprintf("{{%s}} is not a placeholder (a literal {{ cannot be written)", name)}
	}
	if !p.allowed[name] {
		return &templateError{p.tagAt, fmt.Sprintf("unknown placeholder {{%s}}", name)}
	}
	return nil
}

// render writes the template with the variables' values (a missing one is empty).
func (t template) render(b *strings.Builder, vars map[string]string) {
	for _, n := range t {
		switch {
		case n.cond && vars[n.name] != "":
			n.then.render(b, vars)
		case n.cond:
			n.alt.render(b, vars)
		case n.name != "":
			b.WriteString(vars[n.name])
		default:
			b.WriteString(n.text)
		}
	}
}

// match reads text back as the template would have rendered it, returning the values of its
// placeholders; values holds those already known, which are then literal text. An if section
// whose value is not known may have taken either part: each way is tried, its first part
// first. A placeholder runs to the first place the literal text after it follows, or to the
// last when that text ends the template, so a value that quotes the text after it may read
// short: the reading is the simplest one, not always the one meant.
func (t template) match(text string, values map[string]string) (map[string]string, bool) {
	for _, flat := range t.flatten(values) {
		if got, ok := flat.matchFlat(text); ok {
			return got, true
		}
	}
	return nil, false
}

// flatten lists the templates without sections that t can render as: one per way its if
// sections can go (the first part first), known values filled in.
func (t template) flatten(values map[string]string) []template {
	out := []template{nil}
	for _, n := range t {
		if n.cond {
			var parts []template
			v, known := values[n.name]
			if !known || v != "" {
				parts = append(parts, n.then.flatten(values)...)
			}
			if !known || v == "" {
				parts = append(parts, n.alt.flatten(values)...)
			}
			var next []template
			for _, head := range out {
				for _, part := range parts {
					next = append(next, append(slices.Clone(head), part...))
				}
			}
			out = next
			continue
		}
		if v, known := values[n.name]; n.name != "" && known {
			n = node{text: v}
		}
		for i := range out {
			out[i] = append(out[i], n)
		}
	}
	return out
}

// matchFlat matches a template without sections, literal by literal.
func (t template) matchFlat(text string) (map[string]string, bool) {
	got := map[string]string{}
	pending := "" // a placeholder waiting for the literal text that ends it
	for i, n := range t {
		switch {
		case n.name != "":
			if pending != "" {
				got[pending] = "" // two placeholders in a row: the first reads empty
			}
			pending = n.name
		case pending == "":
			if !strings.HasPrefix(text, n.text) {
				return nil, false
			}
			text = text[len(n.text):]
		default:
			at := strings.Index(text, n.text)
			if i == len(t)-1 {
				at = strings.LastIndex(text, n.text)
			}
			if at < 0 {
				return nil, false
			}
			got[pending], text, pending = text[:at], text[at+len(n.text):], ""
		}
	}
	if pending != "" {
		got[pending], text = text, ""
	}
	return got, text == ""
}
