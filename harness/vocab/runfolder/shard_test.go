package runfolder

import "testing"

func TestShardsPartitionTheRun(t *testing.T) {
	tasks := []string{"a", "b", "c", "d", "e"}
	whole := Shard{}.Episodes(tasks, 3)
	if len(whole) != 15 {
		t.Fatalf("whole run: %d episodes", len(whole))
	}
	seen := map[Episode]int{}
	for i := 1; i <= 4; i++ {
		part := Shard{i, 4}.Episodes(tasks, 3)
		if len(part) < 3 || len(part) > 4 {
			t.Errorf("shard %d/4 has %d episodes, want 3 or 4", i, len(part))
		}
		for _, e := range part {
			seen[e]++
		}
	}
	for _, e := range whole {
		if seen[e] != 1 {
			t.Errorf("%v is in %d shards", e, seen[e])
		}
	}
	for _, bad := range []string{"0/2", "3/2", "1/0", "a/b", "1", "1/2/3"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
	s, err := ParseShard("2/3")
	if err != nil || s != (Shard{2, 3}) {
		t.Errorf("ParseShard(2/3) = %+v, %v; want %+v", s, err, Shard{2, 3})
	}
	if s.String() != "2/3" {
		t.Errorf("Shard{2, 3}.String() = %q, want 2/3", s.String())
	}
}
