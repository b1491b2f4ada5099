package main

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"4GiB": 4 << 30, "4G": 4 << 30, "4gb": 4 << 30, "512MiB": 512 << 20, "1.5G": 3 << 29,
		"1048576": 1 << 20, "64k": 64 << 10, " 2 TiB ": 2 << 40} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "GiB", "-1G", "0", "four gigs", "1e30G", "NaNG"} {
		if got, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", bad, got)
		}
	}
}
