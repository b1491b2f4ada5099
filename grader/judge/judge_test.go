package judge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// shopGT has two root causes, aliases and a chaos-mesh group, like the public tasks.
const shopGT = `
groups:
  - {id: flagd-config-1, kind: ConfigMap, namespace: shop, name: flagd-config, root_cause: true}
  - {id: partition-1, kind: NetworkChaos, namespace: chaos-mesh, filter: [.*cart-partition], root_cause: true}
  - {id: cart-service-1, kind: Service, namespace: shop, filter: ['cart\b']}
  - {id: cart-pod-1, kind: Pod, namespace: shop, filter: [cart-.*]}
  - {id: shop-namespace-1, kind: Namespace, namespace: null, filter: [shop]}
aliases: [[cart-service-1, cart-pod-1]]
`

var submission = []string{"shop/ConfigMap/flagd-config", "chaos-mesh/Schedule/shop-cart-partition", "shop/Deployment/cart", "shop/Service/ad"}

// scripted is an Asker that plays back replies (or errors) and records the questions.
type scripted struct {
	replies []string
	errs    []error
	systems []string
	users   []string
}

func (s *scripted) Ask(_ context.Context, system, user string) (string, error) {
	s.systems, s.users = append(s.systems, system), append(s.users, user)
	i := len(s.users) - 1
	if i < len(s.errs) && s.errs[i] != nil {
		return "", s.errs[i]
	}
	if i < len(s.replies) {
		return s.replies[i], nil
	}
	return "", errors.New("no reply scripted")
}

func parse(t *testing.T, doc string) *grader.GroundTruth {
	t.Helper()
	gt, err := grader.ParseGroundTruth([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return gt
}

func score(t *testing.T, j *Judge, names []string) grader.Verdict {
	t.Helper()
	v, err := j.Score(context.Background(), grader.Task{ID: "Scenario-1", GroundTruth: []byte(shopGT)}, parse(t, shopGT), names)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// wantFigures checks a verdict's score and root causes found, each its own failure.
func wantFigures(t *testing.T, v grader.Verdict, score float64, found int) {
	t.Helper()
	if v.Score != score {
		t.Errorf("score %v, want %v", v.Score, score)
	}
	if v.RootCausesFound != found {
		t.Errorf("%d root causes found, want %d", v.RootCausesFound, found)
	}
}

// wantRules checks the rules' grade beside a judge's verdict, each figure its own failure, and
// stops the test when one is wrong.
func wantRules(t *testing.T, r *grader.RulesGrade, score float64, agreed, disagreed int) {
	t.Helper()
	if r == nil {
		t.Fatal("no rules' grade beside the verdict")
	}
	if r.Score != score {
		t.Errorf("rules beside: score %v, want %v", r.Score, score)
	}
	if r.Agreed != agreed {
		t.Errorf("rules beside: %d entities agreed, want %d", r.Agreed, agreed)
	}
	if len(r.Disagreed) != disagreed {
		t.Errorf("rules beside: disagreed on %q, want %d entities", r.Disagreed, disagreed)
	}
	if t.Failed() {
		t.FailNow()
	}
}

func groupOf(v grader.Verdict, entity string) string {
	for _, p := range v.Predictions {
		if p.Entity == entity && p.Group != nil {
			return *p.Group
		}
	}
	return ""
}

func TestJudgeMapsAndScores(t *testing.T) {
	asker := &scripted{replies: []string{"Here is the mapping:\n```json\n" + `{
  "shop/ConfigMap/flagd-config": "flagd-config-1",
  "chaos-mesh/Schedule/shop-cart-partition": "partition-1",
  "shop/deploy/cart": "CART-SERVICE-1",
  "shop/Service/ad": null
}` + "\n```"}}
	v := score(t, &Judge{Model: "openai/judge", Asker: asker, CacheDir: t.TempDir()}, submission)
	if v.Matcher != grader.MatcherJudge {
		t.Errorf("matched by %s, want the judge", v.Matcher)
	}
	if v.JudgeNote != "" {
		t.Errorf("judge note %q, want none", v.JudgeNote)
	}
	wantFigures(t, v, 0.5, 2)
	if v.TP != 2 || v.FP != 2 {
		t.Errorf("TP %d, FP %d; want 2 and 2", v.TP, v.FP)
	}
	if t.Failed() {
		t.Fatalf("verdict = %+v", v)
	}
	// The entity written differently in the reply is resolved; the id takes the ground truth's spelling.
	if g := groupOf(v, "shop/Deployment/cart"); g != "cart-service-1" {
		t.Fatalf("shop/Deployment/cart -> %q", g)
	}
	// The rules map the cart Deployment to cart-pod-1, an alias of the judge's group: agreement.
	wantRules(t, v.Rules, 0.5, 4, 0)
	if asker.systems[0] != SystemPrompt {
		t.Fatal("the system prompt is not the judge's")
	}
	for _, want := range []string{
		`{"id":"cart-service-1","kind":"Service","namespace":"shop","filters":["cart\\b"],"root_cause":false}`,
		`{"id":"shop-namespace-1","kind":"Namespace","namespace":null,"filters":["shop"],"root_cause":false}`,
		`["cart-service-1","cart-pod-1"]`,
		`"chaos-mesh/Schedule/shop-cart-partition"`,
		"mapping each of these 4 entities",
	} {
		if !strings.Contains(asker.users[0], want) {
			t.Errorf("the question lacks %s:\n%s", want, asker.users[0])
		}
	}
}

// TestJudgeReplyPartsIgnored: an unknown group id leaves its entity unmatched, a key that is
// not a submitted entity is ignored, a missing answer is unmatched; each is noted, and the
// judge still decides.
func TestJudgeReplyPartsIgnored(t *testing.T) {
	asker := &scripted{replies: []string{`{"shop/ConfigMap/flagd-config": "flagd-config-1",
	  "chaos-mesh/Schedule/shop-cart-partition": "partition-9", "shop/Pod/invented": "cart-pod-1", "shop/Service/ad": null}`}}
	v := score(t, &Judge{Model: "openai/judge", Asker: asker}, submission)
	if v.Matcher != grader.MatcherJudge {
		t.Errorf("matched by %s, want the judge", v.Matcher)
	}
	wantFigures(t, v, 0, 1)
	if g := groupOf(v, "chaos-mesh/Schedule/shop-cart-partition"); g != "" {
		t.Errorf("the Schedule is matched to %q, want no group (the reply's is unknown)", g)
	}
	if t.Failed() {
		t.Fatalf("verdict = %+v", v)
	}
	for _, want := range []string{`unknown group "partition-9" for chaos-mesh/Schedule/shop-cart-partition`,
		`"shop/Pod/invented" is not a submitted entity`, "no answer for 1 of 4 entities"} {
		if !strings.Contains(v.JudgeNote, want) {
			t.Errorf("note lacks %q: %s", want, v.JudgeNote)
		}
	}
	// The rules found the Schedule's root cause and the cart Pod: they disagree on two entities.
	wantRules(t, v.Rules, 0.5, 2, 2)
}

// TestJudgeFailureFallsBackToRules: a failed call and each kind of malformed reply leave the
// rules to decide, with a note; nothing is cached, so the next grading asks again.
func TestJudgeFailureFallsBackToRules(t *testing.T) {
	for name, c := range map[string]struct {
		reply string
		err   error
		note  string
	}{
		"call failed":    {err: errors.New("HTTP 401: Incorrect API key provided"), note: "HTTP 401: Incorrect API key provided"},
		"no JSON":        {reply: "I cannot decide.", note: "malformed judge reply: no JSON object"},
		"not a group id": {reply: `{"shop/Service/ad": 3}`, note: `the answer for "shop/Service/ad" is 3`},
		"nested":         {reply: `{"mapping": {"shop/Service/ad": null}}`, note: "malformed judge reply"},
		"answers none":   {reply: `{"cart": "cart-pod-1"}`, note: "answers none of the 4 entities"},
		"too long":       {reply: `{"shop/Service/ad": null}` + strings.Repeat(" ", maxReplyBytes), note: "more than"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			asker := &scripted{replies: []string{c.reply, c.reply}, errs: []error{c.err, c.err}}
			j := &Judge{Model: "openai/judge", Asker: asker, CacheDir: dir}
			for range 2 {
				v := score(t, j, submission)
				if v.Matcher != grader.MatcherRules {
					t.Errorf("matcher %q, want %q", v.Matcher, grader.MatcherRules)
				}
				if v.Rules != nil {
					t.Errorf("a second verdict of the rules: %+v", v.Rules)
				}
				if v.Score != 0.5 {
					t.Errorf("score %v, want the rules' 0.5", v.Score)
				}
				if want := "judge failed, the rules decided: "; !strings.HasPrefix(v.JudgeNote, want) {
					t.Errorf("note %q, want it to start %q", v.JudgeNote, want)
				}
				if !textcheck.Has(t, "the note", v.JudgeNote, c.note) || t.Failed() {
					t.Fatalf("verdict = %+v", v)
				}
			}
			if files, _ := os.ReadDir(dir); len(asker.users) != 2 || len(files) != 0 {
				t.Fatalf("%d calls, %d cache files", len(asker.users), len(files))
			}
		})
	}
}

func TestJudgeCacheHitMakesNoCall(t *testing.T) {
	dir := t.TempDir()
	reply := `{"shop/ConfigMap/flagd-config": "flagd-config-1", "chaos-mesh/Schedule/shop-cart-partition": "partition-1"}`
	first := &scripted{replies: []string{reply}}
	a := score(t, &Judge{Model: "openai/judge", Asker: first, CacheDir: dir}, submission[:2])
	second := &scripted{}
	b := score(t, &Judge{Model: "openai/judge", Asker: second, CacheDir: dir}, submission[:2])
	if n := len(first.users); n != 1 {
		t.Errorf("the first judge was asked %d times, want 1", n)
	}
	if n := len(second.users); n != 0 {
		t.Errorf("the second judge was asked %d times, want 0 (the cache answers)", n)
	}
	if a.Score != 1 || b.Score != 1 {
		t.Errorf("scores %v then %v, want 1 both times", a.Score, b.Score)
	}
	if b.Matcher != grader.MatcherJudge {
		t.Errorf("the cached verdict is matched by %s, want the judge (%s)", b.Matcher, b.JudgeNote)
	}
	if t.Failed() {
		t.FailNow()
	}
	// Another judge model is another question.
	other := &scripted{replies: []string{reply}}
	score(t, &Judge{Model: "anthropic/judge", Asker: other, CacheDir: dir}, submission[:2])
	files, _ := os.ReadDir(dir)
	if len(other.users) != 1 || len(files) != 2 {
		t.Fatalf("another model: %d calls, %d cache files", len(other.users), len(files))
	}
	// A corrupt cache file is a miss: the question is asked again and the file rewritten.
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name()), []byte("{cut"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	again := &scripted{replies: []string{reply}}
	if v := score(t, &Judge{Model: "openai/judge", Asker: again, CacheDir: dir}, submission[:2]); len(again.users) != 1 || v.Score != 1 {
		t.Fatalf("corrupt cache: %d calls, %+v", len(again.users), v)
	}
	if v := score(t, &Judge{Model: "openai/judge", Asker: &scripted{}, CacheDir: dir}, submission[:2]); v.Matcher != grader.MatcherJudge {
		t.Fatalf("the rewritten entry was not used: %+v", v)
	}
}

func TestCacheKeyNamesTheQuestion(t *testing.T) {
	gt, entities := []byte(shopGT), []string{"a/Pod/x", "b/Pod/y"}
	base := cacheKey("openai/judge", gt, entities, SystemPrompt, "user")
	if len(base) != 64 || base != cacheKey("openai/judge", gt, entities, SystemPrompt, "user") {
		t.Fatalf("key %q is not a stable sha256", base)
	}
	for name, key := range map[string]string{
		"model":         cacheKey("openai/judge-2", gt, entities, SystemPrompt, "user"),
		"ground truth":  cacheKey("openai/judge", append([]byte(shopGT), '\n'), entities, SystemPrompt, "user"),
		"entities":      cacheKey("openai/judge", gt, entities[:1], SystemPrompt, "user"),
		"entity bounds": cacheKey("openai/judge", gt, []string{"a/Pod/xb/Pod/y"}, SystemPrompt, "user"),
		"system prompt": cacheKey("openai/judge", gt, entities, SystemPrompt+" ", "user"),
		"user prompt":   cacheKey("openai/judge", gt, entities, SystemPrompt, "user "),
	} {
		if key == base {
			t.Errorf("changing the %s keeps the key", name)
		}
	}
}

// TestJudgeCacheWriteFailureIsNoted: an answer that cannot be cached still decides.
func TestJudgeCacheWriteFailureIsNoted(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	asker := &scripted{replies: []string{`{"shop/Service/ad": null}`}}
	v := score(t, &Judge{Model: "openai/judge", Asker: asker, CacheDir: notADir}, []string{"shop/Service/ad"})
	if v.Matcher != grader.MatcherJudge || !strings.Contains(v.JudgeNote, "answer not cached") {
		t.Fatalf("verdict = %+v", v)
	}
}

func TestJudgeNothingToAsk(t *testing.T) {
	asker := &scripted{}
	v := score(t, &Judge{Model: "openai/judge", Asker: asker}, []string{" ", ""})
	if n := len(asker.users); n != 0 {
		t.Errorf("%d calls, want none", n)
	}
	if v.Matcher != grader.MatcherJudge {
		t.Errorf("matched by %s, want the judge", v.Matcher)
	}
	if v.Score != 0 {
		t.Errorf("score %v, want 0", v.Score)
	}
	if n := len(v.Predictions); n != 0 {
		t.Errorf("%d predictions, want none", n)
	}
}

// TestJudgeInterrupted: a call cut by the context is an error, not a fallback to the rules.
func TestJudgeInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	j := &Judge{Model: "openai/judge", Asker: &scripted{errs: []error{context.Canceled}}}
	if _, err := j.Score(ctx, grader.Task{GroundTruth: []byte(shopGT)}, parse(t, shopGT), submission); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// gated is an Asker whose answers wait for release; it counts the questions it gets.
type gated struct {
	reply   string
	release chan struct{}
	mu      sync.Mutex
	calls   int
}

func (g *gated) Ask(context.Context, string, string) (string, error) {
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	<-g.release
	return g.reply, nil
}

// TestSameQuestionAtOnceIsAskedOnce: two episodes asking the same question at the same time
// (repeats with the same diagnosis) share one call, even with no cache.
func TestSameQuestionAtOnceIsAskedOnce(t *testing.T) {
	asker := &gated{reply: `{"shop/ConfigMap/flagd-config": "flagd-config-1"}`, release: make(chan struct{})}
	j := &Judge{Model: "openai/judge", Asker: asker}
	gt := parse(t, shopGT)
	names := []string{"shop/ConfigMap/flagd-config"}
	verdicts := make(chan grader.Verdict, 2)
	for range 2 {
		go func() {
			v, err := j.Score(context.Background(), grader.Task{ID: "Scenario-1", GroundTruth: []byte(shopGT)}, gt, names)
			if err != nil {
				t.Error(err)
			}
			verdicts <- v
		}()
	}
	for { // until one asks and the other waits for that answer
		j.mu.Lock()
		waiting := 0
		for _, q := range j.inflight {
			waiting += q.waiters
		}
		j.mu.Unlock()
		if waiting == 1 {
			break
		}
		runtime.Gosched()
	}
	close(asker.release)
	for range 2 {
		if v := <-verdicts; v.Matcher != grader.MatcherJudge || v.TP != 1 {
			t.Errorf("verdict %+v", v)
		}
	}
	if asker.calls != 1 {
		t.Fatalf("%d calls for one question asked twice at once", asker.calls)
	}
}

// TestJudgeIsAskedOfTheBoundOnly: a submission past grader.MaxEntities puts only the first
// entities to the judge, and the verdict counts the rest.
func TestJudgeIsAskedOfTheBoundOnly(t *testing.T) {
	names := append([]string(nil), submission...)
	for i := range grader.MaxEntities + 50 {
		names = append(names, fmt.Sprintf("shop/Pod/noise-%d", i))
	}
	asker := &scripted{replies: []string{`{"shop/ConfigMap/flagd-config": "flagd-config-1"}`}}
	v := score(t, &Judge{Model: "m", Asker: asker}, names)
	if len(asker.users) != 1 {
		t.Fatalf("%d questions", len(asker.users))
	}
	asked := strings.Count(asker.users[0], "\n\"shop/") + strings.Count(asker.users[0], "\n\"chaos-mesh/")
	if asked != grader.MaxEntities || strings.Contains(asker.users[0], fmt.Sprintf("noise-%d\"", grader.MaxEntities)) {
		t.Fatalf("the judge was asked of %d entities, want %d", asked, grader.MaxEntities)
	}
	if v.EntitiesDropped != len(names)-grader.MaxEntities || len(v.Predictions) != grader.MaxEntities {
		t.Fatalf("verdict: %d predictions, %d dropped", len(v.Predictions), v.EntitiesDropped)
	}
}

// TestCustomPromptIsFilledIn: a prompt of the user's is parted at its --- user --- line, its
// placeholders filled in, and its text keys the cache: the built-in prompt's answer is not
// taken for it.
func TestCustomPromptIsFilledIn(t *testing.T) {
	p, err := ParsePrompt("Judge strictly.\n--- user ---\nTruth:\n{{ ground_truth }}Groups:\n{{groups}}{{aliases}}Entities ({{entities_count}}): {{entities_json}}\n")
	if err != nil {
		t.Fatal(err)
	}
	gt := parse(t, shopGT)
	s := &scripted{replies: []string{`{"shop/ConfigMap/flagd-config": "flagd-config-1"}`, `{"shop/ConfigMap/flagd-config": null}`}}
	dir := t.TempDir()
	builtin := &Judge{Model: "m", Asker: s, CacheDir: dir}
	custom := &Judge{Model: "m", Asker: s, CacheDir: dir, Prompt: p}
	names := []string{"shop/ConfigMap/flagd-config"}
	if _, err := builtin.Map(context.Background(), []byte(shopGT), gt, names); err != nil {
		t.Fatal(err)
	}
	m, err := custom.Map(context.Background(), []byte(shopGT), gt, names)
	if err != nil || len(s.users) != 2 {
		t.Fatalf("%d questions, %v", len(s.users), err)
	}
	if m.Groups["shop/ConfigMap/flagd-config"] != "" {
		t.Errorf("the built-in prompt's answer was taken for the custom one: %+v", m)
	}
	if s.systems[1] != "Judge strictly.\n" {
		t.Errorf("system %q, want the custom prompt's", s.systems[1])
	}
	user := s.users[1]
	if want := "Truth:\n" + shopGT + "Groups:\n{\"id\":"; !strings.HasPrefix(user, want) {
		t.Errorf("user %q, want it to start %q", user, want)
	}
	textcheck.Has(t, "the user message", user, `["cart-service-1","cart-pod-1"]`)
	if want := "Entities (1): [\"shop/ConfigMap/flagd-config\"]\n"; !strings.HasSuffix(user, want) {
		t.Errorf("user %q, want it to end %q", user, want)
	}
}

func TestParsePromptRefusals(t *testing.T) {
	for text, want := range map[string]string{
		"":                                  "empty",
		"{{groups}} {{entities}} {{agent}}": `unknown placeholder "{{agent}}"`,
		"{{entities}} only":                 "never shows the ground truth",
		"{{ground_truth}} only":             "never shows the submitted entities",
	} {
		if _, err := ParsePrompt(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
	p, err := ParsePrompt("{{ground_truth}}\n{{entities}}\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SHA256) != 64 {
		t.Errorf("SHA256 %q, want 64 hex digits", p.SHA256)
	}
	if p.system != "" {
		t.Errorf("system prompt %q, want none (the file has no section for it)", p.system)
	}

}
