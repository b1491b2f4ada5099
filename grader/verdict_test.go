package grader

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
)

func TestDistinctEntitiesAreWhatIsGraded(t *testing.T) {
	got, dropped := DistinctEntities([]string{"", "shop/ConfigMap/flagd-config", " /shop/configmaps/FLAGD-CONFIG ", "junk", "JUNK", "shop/Service/cart"})
	want := []string{"shop/ConfigMap/flagd-config", "junk", "shop/Service/cart"}
	if !slices.Equal(got, want) || dropped != 0 {
		t.Fatalf("DistinctEntities = %q, want %q", got, want)
	}
}

func TestAliasSets(t *testing.T) {
	gt := mustParse(t, `
groups:
  - {id: a, kind: Pod, filter: [a], root_cause: true}
  - {id: b, kind: Service, filter: [b]}
  - {id: c, kind: Pod, filter: [c]}
  - {id: b, kind: Pod, filter: [b-.*]}
  - {id: d, kind: Pod, filter: [d]}
aliases: [[c, b], [d, c]]
`)
	if got := gt.AliasSets(); len(got) != 1 || !slices.Equal(got[0], []string{"b", "c", "d"}) {
		t.Fatalf("AliasSets = %q", got)
	}
	if got := mustParse(t, "groups: [{id: a, kind: Pod, name: a, root_cause: true}]").AliasSets(); got != nil {
		t.Fatalf("no aliases: %q", got)
	}
}

// TestScoreMappingUsesTheGivenGroups: the mapping decides, not the rules; an id the ground
// truth lacks and an entity left out match nothing.
func TestScoreMappingUsesTheGivenGroups(t *testing.T) {
	gt := mustParse(t, shopGT)
	names := []string{"shop/ConfigMap/flagd-config", "shop/quota/mem-quota", "shop/Deployment/cart", "shop/Service/ad", "shop/Service/cart"}
	s := gt.ScoreMapping(names, map[string]string{
		"shop/ConfigMap/flagd-config": "flags",
		"shop/quota/mem-quota":        "quota-1",
		"shop/Deployment/cart":        "cart-service-1", // the rules would say cart-pod-1: same set
		"shop/Service/ad":             "no-such-group",
	})
	if got, want := counts(s), "score 0.4, 2 tp, 3 fp, 2 found, 0 dropped"; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
	groups := map[string]string{}
	for _, p := range s.Predictions {
		if p.Group != nil {
			groups[p.Entity] = *p.Group
		}
	}
	if len(groups) != 3 || groups["shop/Deployment/cart"] != "cart-service-1" {
		t.Fatalf("groups = %v", groups)
	}
	// A judge that maps a root cause to nothing loses the recall gate.
	if s := gt.ScoreMapping(names[:2], map[string]string{"shop/ConfigMap/flagd-config": "flags"}); s.Score != 0 || s.RootCausesFound != 1 {
		t.Fatalf("missed root cause: %+v", s)
	}
}

func TestJudgeVerdictKeepsTheRulesBeside(t *testing.T) {
	gt := mustParse(t, shopGT)
	names := []string{"shop/ConfigMap/flagd-config", "shop/quota/mem-quota", "shop/Pod/cart-5f45f75855-j5sn9", "shop/Service/ad"}
	v := gt.JudgeVerdict(names, map[string]string{
		"shop/ConfigMap/flagd-config":    "flags",
		"shop/quota/mem-quota":           "quota-1",
		"shop/Pod/cart-5f45f75855-j5sn9": "cart-service-1", // the alias of the rules' cart-pod-1
		"shop/Service/ad":                "flags",          // the rules match nothing
	}, "a note")
	if v.Matcher != MatcherJudge || v.JudgeNote != "a note" {
		t.Errorf("verdict by %q noting %q, want the judge's, noting \"a note\"", v.Matcher, v.JudgeNote)
	}
	if v.Score != 0.75 {
		t.Errorf("score %v, want 0.75", v.Score)
	}
	if v.Rules == nil {
		t.Fatal("no rules' verdict beside the judge's")
	}
	r := *v.Rules
	if got, want := fmt.Sprintf("score %v, %d tp, %d fp, %d found, %d agreed", r.Score, r.TP, r.FP, r.RootCausesFound, r.Agreed),
		"score 0.5, 2 tp, 2 fp, 2 found, 3 agreed"; got != want {
		t.Errorf("rules beside: %s, want %s", got, want)
	}
	if want := []string{"shop/Service/ad"}; !slices.Equal(r.Disagreed, want) {
		t.Errorf("rules beside disagree on %q, want %q", r.Disagreed, want)
	}
	rules := gt.RulesVerdict(names, "judge failed")
	if rules.Matcher != MatcherRules || rules.JudgeNote != "judge failed" {
		t.Errorf("rules verdict by %q noting %q, want the rules', noting \"judge failed\"", rules.Matcher, rules.JudgeNote)
	}
	if rules.Rules != nil {
		t.Errorf("a rules' verdict beside the rules' own: %+v", *rules.Rules)
	}
	if rules.Score != 0.5 {
		t.Errorf("rules verdict score %v, want 0.5", rules.Score)
	}
}

func judged(score, rulesScore float64, agreed int, disagreed ...string) Episode {
	return Episode{Status: StatusOK, Verdict: Verdict{Matcher: MatcherJudge, EpisodeScore: EpisodeScore{Score: score},
		Rules: &RulesGrade{Score: rulesScore, Agreed: agreed, Disagreed: disagreed}}}
}

func TestJudgeSummaryAgreement(t *testing.T) {
	tasks := []TaskResult{
		{Task: "a", Episodes: []Episode{judged(1, 1, 2), judged(0.5, 0, 1, "x"), {Status: StatusMissing}}},
		{Task: "b", Episodes: []Episode{judged(0, 0, 0, "y", "z"),
			{Status: StatusOK, Verdict: Verdict{Matcher: MatcherRules, JudgeNote: "judge failed: HTTP 401", EpisodeScore: EpisodeScore{Score: 1}}}}},
	}
	j := JudgeSummary("openai/judge", tasks)
	if j.Model != "openai/judge" {
		t.Errorf("model %q, want openai/judge", j.Model)
	}
	if j.Judged != 3 {
		t.Errorf("%d episodes judged, want 3", j.Judged)
	}
	if j.Fallbacks != 1 {
		t.Errorf("%d fallbacks, want 1", j.Fallbacks)
	}
	if a := j.ScoreAgreement; a == nil || *a != 2.0/3 {
		t.Errorf("score agreement %v, want 2/3", deref(a))
	}
	if a := j.EntityAgreement; a == nil || *a != 0.5 {
		t.Errorf("entity agreement %v, want 0.5", deref(a))
	}
	if t.Failed() {
		t.FailNow()
	}
	// The rules' headline: 1 + 0 + 0 (missing) + 0 + 1 (fallback) over 5 episodes.
	if j.RulesScore != 0.4 {
		t.Fatalf("rules score = %v", j.RulesScore)
	}
	none := JudgeSummary("openai/judge", []TaskResult{{Task: "a", Episodes: []Episode{{Status: StatusInvalid}}}})
	if none.Judged != 0 {
		t.Errorf("nothing judged: %d episodes judged", none.Judged)
	}
	if none.ScoreAgreement != nil {
		t.Errorf("nothing judged: score agreement %v, want none", *none.ScoreAgreement)
	}
	if none.EntityAgreement != nil {
		t.Errorf("nothing judged: entity agreement %v, want none", *none.EntityAgreement)
	}
}

// TestGradeSubmissionsWithAScorer: the scorer decides every readable submission, several at
// once, and is never asked about missing or invalid ones.
func TestGradeSubmissionsWithAScorer(t *testing.T) {
	dir := t.TempDir()
	for r, doc := range []string{`["shop/cm/flagd-config", "shop/quota/mem-quota"]`, `["shop/Service/cart"]`, `not json`} {
		testfs.Write(t, filepath.Join(dir, "T", string(rune('1'+r))+".json"), doc)
	}
	files, _, err := FindSubmissions(dir)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	always := func(_ context.Context, task Task, gt *GroundTruth, names []string) (Verdict, error) {
		calls.Add(1)
		if task.ID != "T" {
			t.Errorf("task %q", task.ID)
		}
		mapping := map[string]string{}
		entities, _ := DistinctEntities(names)
		for _, n := range entities {
			mapping[n] = "flags"
		}
		return gt.JudgeVerdict(names, mapping, ""), nil
	}
	results, _, err := GradeSubmissions(context.Background(), []Task{{ID: "T", GroundTruth: []byte(shopGT)}}, files,
		GradeOptions{Repeats: 4, Scorer: always, Parallel: 3})
	if err != nil {
		t.Fatal(err)
	}
	eps := results[0].Episodes
	if n := calls.Load(); n != 2 {
		t.Errorf("%d calls of the judge, want 2", n)
	}
	for i, want := range []string{MatcherJudge, MatcherJudge, ""} {
		if eps[i].Matcher != want {
			t.Errorf("episode %d matched by %q, want %q", i+1, eps[i].Matcher, want)
		}
	}
	if eps[0].Score != 0 {
		t.Errorf("episode 1 scored %v, want the judge's 0", eps[0].Score)
	}
	if eps[0].Rules == nil {
		t.Errorf("episode 1 has no verdict of the rules")
	} else if eps[0].Rules.Score != 1 {
		t.Errorf("episode 1 scored %v by the rules, want 1", eps[0].Rules.Score)
	}
	if got, want := [2]string{eps[2].Status, eps[3].Status}, [2]string{StatusInvalid, StatusMissing}; got != want {
		t.Errorf("episodes 3 and 4 of status %q, want %q", got, want)
	}
	if t.Failed() {
		t.Fatalf("episodes %+v", eps)
	}
}

// TestGradeSubmissionsInterrupted: a scorer stopped by the context makes the whole grading
// fail with the context's error, rather than return partial grades.
func TestGradeSubmissionsInterrupted(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "T", "1.json"), `["shop/cm/flagd-config"]`)
	files, _, _ := FindSubmissions(dir)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := func(ctx context.Context, _ Task, _ *GroundTruth, _ []string) (Verdict, error) {
		cancel()
		return Verdict{}, ctx.Err()
	}
	results, _, err := GradeSubmissions(ctx, []Task{{ID: "T", GroundTruth: []byte(shopGT)}}, files, GradeOptions{Scorer: stopped})
	if !errors.Is(err, context.Canceled) || results != nil {
		t.Fatalf("results %v, err %v", results, err)
	}
}

func TestRulesScorerNamesItself(t *testing.T) {
	gt := mustParse(t, shopGT)
	v, err := Rules(context.Background(), Task{}, gt, []string{"shop/cm/flagd-config"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Matcher != MatcherRules {
		t.Errorf("matched by %s, want the rules", v.Matcher)
	}
	if v.JudgeNote != "" {
		t.Errorf("judge note %q, want none", v.JudgeNote)
	}
	if v.RootCausesFound != 1 {
		t.Errorf("%d root causes found, want 1", v.RootCausesFound)
	}
	if g := v.Predictions[0].Group; g == nil || *g != "flags" {
		t.Errorf("the prediction's group is %v, want flags", deref(g))
	}

}

// deref shows what p points to, or none, for a failure's message.
func deref[T any](p *T) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}
