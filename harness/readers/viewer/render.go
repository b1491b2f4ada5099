package viewer

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aa-grade/aa-grade/harness/readers/report"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/english"
)

//go:embed assets
var assets embed.FS

// The page's style and script, inline in every page (a shared page is one file that loads
// nothing) and allowed by their hashes: no other style or script can run, whatever a page
// shows.
var (
	style  = mustAsset("assets/viewer.css")
	script = mustAsset("assets/viewer.js")
	// policy is the Content-Security-Policy of every page: nothing from elsewhere, only this
	// style and script, and fetch only to the page's own server (a live page polls it).
	policy = fmt.Sprintf(
		"default-src 'none'; style-src '%s'; script-src '%s'; img-src data:; connect-src 'self'; base-uri 'none'; "+
			"form-action 'none'", hash(style), hash(script))
)

func mustAsset(name string) string {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"visible":     visible,
	"style":       func() template.CSS { return template.CSS(style) },
	"script":      func() template.JS { return template.JS(script) },
	"policy":      func() string { return policy },
	"score":       func(f float64) string { return fmt.Sprintf("%.3f", f) },
	"count":       english.Count,
	"short":       func(f float64) string { return abbr("ok", f) },
	"cost":        report.FormatUSD,
	"testNote":    func() string { return report.TestNote },
	"partialNote": func() string { return report.PartialNote },
	"spendFile":   func() string { return runfolder.SpendFile },
	"tokens":      tokens,
	"seconds":     func(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) },
	"secs":        func(f float64) string { return fmt.Sprintf("%.1f s", f) },
	"clock":       func(t time.Time) string { return t.UTC().Format("15:04:05") },
	"fold":        fold,
	"lines":       func(s string) int { return strings.Count(s, "\n") + 1 },
	"chars":       utf8.RuneCountInString,
	"firstLine": func(s string) string {
		line, _, _ := strings.Cut(s, "\n")
		return line
	},
	"add":     func(a, b int) int { return a + b },
	"label":   label,
	"abbr":    abbr,
	"iterate": func(n int) []int { return make([]int, n) },
	"stream":  func(name string, s promptset.Stream) streamView { return streamView{name, s} },
}).ParseFS(assets, "assets/*.tmpl"))

// visible shows a text's control characters instead of passing them to the browser, written
// as escapes any font can show: a terminal sequence a command printed reads as \x1b[31m, a
// mark that would reorder the text around it (Trojan Source) as \u202e. Tabs and newlines
// stay; invalid UTF-8 becomes U+FFFD.
func visible(s string) string {
	shown := func(r rune) bool {
		return r == '\n' || r == '\t' || !(unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r))
	}
	if strings.IndexFunc(s, func(r rune) bool { return !shown(r) }) < 0 {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case shown(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

func label(status string) string { return strings.ReplaceAll(status, "_", " ") }

// abbr is an episode in a grid cell: its score when graded, else its status in a word.
func abbr(status string, score float64) string {
	switch status {
	case "ok":
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", score), "0"), ".")
	case "max_turns":
		return "max"
	case "no_submission":
		return "none"
	case "invalid":
		return "inv"
	case "output_limit":
		return "cut"
	case "context_overflow":
		return "full"
	case "invalid_arguments":
		return "args"
	case "refused_limit":
		return "ref"
	case "missing":
		return "–"
	case "error":
		return "err"
	case "cost_limit":
		return "$"
	case "running":
		return "run"
	}
	return "·"
}

// streamView is an output stream with its name, for the stream template.
type streamView struct {
	Name   string
	Stream promptset.Stream
}

// fold says an output is long enough to be folded away until opened.
func fold(s string) bool { return len(s) > 2000 || strings.Count(s, "\n") > 25 }

func tokens(u model.Usage) string {
	s := english.Number(u.Input) + " in"
	if u.CachedRead > 0 {
		s += " (" + english.Number(u.CachedRead) + " cached)"
	}
	s += ", " + english.Number(u.Output) + " out"
	if u.Reasoning > 0 {
		s += " (" + english.Number(u.Reasoning) + " reasoning)"
	}
	return s
}

// render writes one page.
func render(w io.Writer, name string, data any) error {
	return pages.ExecuteTemplate(w, name, data)
}
