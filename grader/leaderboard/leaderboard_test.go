package leaderboard

import "testing"

func TestPublishedIsSortedAndBounded(t *testing.T) {
	for i, r := range Published {
		if r.Score <= 0 || r.Score >= 1 {
			t.Errorf("%s: score %v out of (0, 1)", r.Label, r.Score)
		}
		if i > 0 && r.Score > Published[i-1].Score {
			t.Errorf("%s (%v) ranks below %s (%v)", r.Label, r.Score, Published[i-1].Label, Published[i-1].Score)
		}
		if got, ok := Find(r.Label); !ok || got.Label != r.Label {
			t.Errorf("Find(%q) = %v, %v", r.Label, got, ok)
		}
	}
	if _, ok := Find("no such model"); ok {
		t.Error("Find found a label that is not published")
	}
}

func TestPublicTasks(t *testing.T) {
	seen := map[string]bool{}
	for _, id := range PublicTasks {
		if seen[id] {
			t.Errorf("%s listed twice", id)
		}
		seen[id] = true
	}
	if len(seen) != 40 {
		t.Errorf("%d public tasks, want 40: %v", len(seen), PublicTasks)
	}
	for id, public := range map[string]bool{"Scenario-1": true, "Scenario-105": true, "Scenario-10": false} {
		if seen[id] != public {
			t.Errorf("%s public: %v, want %v", id, seen[id], public)
		}
	}

}
