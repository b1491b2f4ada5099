package main

import (
	"fmt"
	"strconv"
	"strings"
)

// sizeUnits are the suffixes a size flag takes: powers of 1024, however written.
var sizeUnits = []struct {
	suffixes []string
	factor   int64
}{
	{[]string{"TiB", "TB", "T"}, 1 << 40},
	{[]string{"GiB", "GB", "G"}, 1 << 30},
	{[]string{"MiB", "MB", "M"}, 1 << 20},
	{[]string{"KiB", "KB", "K"}, 1 << 10},
	{[]string{"B", ""}, 1},
}

// parseSize reads a size such as 4GiB, 512M or 1048576 (bytes); units are powers of 1024.
func parseSize(s string) (int64, error) {
	text := strings.TrimSpace(s)
	for _, u := range sizeUnits {
		for _, suffix := range u.suffixes {
			if !strings.HasSuffix(strings.ToUpper(text), strings.ToUpper(suffix)) {
				continue
			}
			number := strings.TrimSpace(text[:len(text)-len(suffix)])
			n, err := strconv.ParseFloat(number, 64)
			if err != nil || !(n > 0 && n*float64(u.factor) <= float64(1<<62)) { // NaN too
				return 0, fmt.Errorf("%q is not a size (like 4GiB, 512MiB)", s)
			}
			return int64(n * float64(u.factor)), nil
		}
	}
	return 0, fmt.Errorf("%q is not a size (like 4GiB, 512MiB)", s)
}
