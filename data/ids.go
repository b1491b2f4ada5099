package data

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// maxIDParts bounds the ranges and names DescribeIDs lists.
const maxIDParts = 20

// DescribeIDs lists task ids as a refusal names them, in the numbers --tasks takes: ids of
// the form Scenario-N as ranges of N ("2-5, 38, 901-912"), others by name, at most
// maxIDParts of them, then how many there are in all.
func DescribeIDs(ids []string) string {
	var nums []int
	var names []string
	for _, id := range ids {
		n, err := strconv.Atoi(strings.TrimPrefix(id, "Scenario-"))
		if strings.HasPrefix(id, "Scenario-") && err == nil && n >= 0 {
			nums = append(nums, n)
		} else {
			names = append(names, id)
		}
	}
	slices.Sort(nums)
	nums = slices.Compact(nums)
	var parts []string
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(nums[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", nums[i], nums[j]))
		}
		i = j + 1
	}
	slices.Sort(names)
	parts = append(parts, names...)
	if len(parts) > maxIDParts {
		return fmt.Sprintf("%s, ... (%d tasks)", strings.Join(parts[:maxIDParts], ", "), len(ids))
	}
	return strings.Join(parts, ", ")
}
