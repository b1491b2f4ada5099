package judge

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
)

// Prompt is a judge prompt of the user's (--judge-prompt): a template whose placeholders take
// the question's ground truth and entities. A line `--- user ---` splits it into the system
// message and the user message; without one the whole is the user message and no system
// message is sent. The reply must still be one JSON object mapping each entity, as listed, to
// a group id or null.
type Prompt struct {
	system, user string
	// SHA256 is the hex digest of the file as read: it names the prompt in the judge's name
	// (run.json, summaries), so a run is never resumed or its verdicts reused under another.
	SHA256 string
}

// Placeholders a judge prompt may hold, and what each becomes.
var placeholders = map[string]string{
	"ground_truth":   "the task's ground truth as its file has it (YAML)",
	"groups":         "the ground-truth groups, one JSON object a line, as the built-in prompt shows them",
	"aliases":        "the alias sets, one JSON array of group ids a line (empty when there are none)",
	"entities":       "the submitted entities, one JSON string a line",
	"entities_json":  "the submitted entities as one JSON array",
	"entities_count": "how many entities are submitted",
}

// PlaceholderHelp lists the placeholders with what each becomes, for --help and errors.
func PlaceholderHelp() string {
	var names []string
	for name := range placeholders {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "{{%s}}: %s\n", n, placeholders[n])
	}
	return b.String()
}

// userSeparator splits a prompt file into its system and user messages.
const userSeparator = "--- user ---"

var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_.-]*)\s*\}\}`)

// ParsePrompt reads a prompt file's text, refusing a placeholder it does not know and a
// prompt that would not show the judge both the ground truth ({{ground_truth}} or
// {{groups}}) and the entities ({{entities}} or {{entities_json}}): checked before any call.
func ParsePrompt(text string) (*Prompt, error) {
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("the judge prompt is empty")
	}
	sum := sha256.Sum256([]byte(text))
	p := &Prompt{user: text, SHA256: hex.EncodeToString(sum[:])}
	if before, after, ok := cutLine(text, userSeparator); ok {
		p.system, p.user = before, after
	}
	used := map[string]bool{}
	for _, m := range placeholder.FindAllStringSubmatch(text, -1) {
		if _, ok := placeholders[m[1]]; !ok {
			return nil, fmt.Errorf("unknown placeholder %s in the judge prompt; the placeholders are:\n%s", strconv.Quote(m[0]),
				PlaceholderHelp())
		}
		used[m[1]] = true
	}
	if !used["ground_truth"] && !used["groups"] {
		return nil, fmt.Errorf("the judge prompt never shows the ground truth: it needs {{ground_truth}} or {{groups}}")
	}
	if !used["entities"] && !used["entities_json"] {
		return nil, fmt.Errorf(
			"the judge prompt never shows the submitted entities: it needs {{entities}} or {{entities_json}}")
	}
	return p, nil
}

// cutLine splits text around the first line that is exactly sep.
func cutLine(text, sep string) (string, string, bool) {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		if strings.TrimRight(l, "\r\n") == sep {
			return strings.Join(lines[:i], ""), strings.Join(lines[i+1:], ""), true
		}
	}
	return "", "", false
}

// render fills the prompt in for one question.
func (p *Prompt) render(groundTruth []byte, gt *grader.GroundTruth, entities []string) (system, user string) {
	values := map[string]string{
		"ground_truth":   string(groundTruth),
		"groups":         groupLines(gt),
		"aliases":        aliasLines(gt),
		"entities":       entityLines(entities),
		"entities_json":  strings.TrimSpace(jsonLine(entities)),
		"entities_count": strconv.Itoa(len(entities)),
	}
	fill := func(s string) string {
		return placeholder.ReplaceAllStringFunc(s, func(m string) string {
			return values[placeholder.FindStringSubmatch(m)[1]]
		})
	}
	return fill(p.system), fill(p.user)
}
