package runfolder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/atomicfile"
	"github.com/aa-grade/aa-grade/internal/english"
)

// SpendFile is the ledger of what the run spent: one line per model call of its episodes,
// appended and synced as each call ends, whatever becomes of the episode (finished, stopped at
// the budget, failed, killed, or played again). results.jsonl keeps each episode's last
// attempt; the ledger keeps every call, so what the run spent is its sum.
const SpendFile = "spend.jsonl"

// Charge is one model call in the ledger: the episode that made it, its usage as the provider
// (or the gateway's worst case) gave it, and its cost at the run's prices, null when they are
// unknown.
type Charge struct {
	Task    string      `json:"task"`
	Repeat  int         `json:"repeat"`
	Usage   model.Usage `json:"usage"`
	CostUSD *float64    `json:"cost_usd"`
	// Judge marks a call of the LLM judge grading the episode (run --judge), at the judge's
	// prices: the run paid for it too.
	Judge bool `json:"judge,omitempty"`
}

// Spend is what a run spent in all: the ledger's sum.
type Spend struct {
	Calls  int         `json:"calls"`
	Tokens model.Usage `json:"tokens"`
	// CostUSD sums the calls with a price; null when no call has one (the prices were
	// unknown), never 0 for a cost that is not known.
	CostUSD *float64 `json:"cost_usd"`
	// Unpriced counts the calls whose cost is unknown: with CostUSD set, the spend is partly
	// known, and CostUSD is only its known part.
	Unpriced int `json:"unpriced_calls"`
	// WorstCase counts the calls whose usage never came, counted at their worst case.
	WorstCase int `json:"worst_case_calls"`
}

// Add counts one more call.
func (s *Spend) Add(c Charge) {
	s.Calls++
	s.Tokens.Add(c.Usage)
	if c.Usage.WorstCase {
		s.WorstCase++
	}
	if c.CostUSD == nil {
		s.Unpriced++
		if s.Calls == s.Unpriced {
			s.CostUSD = nil
		}
		return
	}
	sum := *c.CostUSD
	if s.CostUSD != nil {
		sum += *s.CostUSD
	}
	s.CostUSD = &sum
}

// Join adds another ledger's spend (a shard's).
func (s *Spend) Join(o Spend) {
	s.Calls += o.Calls
	s.Tokens.Add(o.Tokens)
	s.Unpriced += o.Unpriced
	s.WorstCase += o.WorstCase
	if o.CostUSD != nil {
		sum := *o.CostUSD
		if s.CostUSD != nil {
			sum += *s.CostUSD
		}
		s.CostUSD = &sum
	}
}

// Known is the spend in dollars when every call's cost is known; nil otherwise (the budget and
// the reports then say "unknown", or how much of it is known).
func (s Spend) Known() *float64 {
	if s.Unpriced > 0 {
		return nil
	}
	if s.CostUSD == nil {
		zero := 0.0
		return &zero
	}
	return s.CostUSD
}

// Text is the spend as every text says it: "$0.054", "unknown (12 calls at unknown prices)",
// "at least $0.054 (3 of 12 calls at unknown prices)", with the calls counted at their worst
// case named.
func (s Spend) Text() string {
	var text string
	switch {
	case s.Unpriced == 0:
		text = FormatUSD(s.Known())
	case s.CostUSD == nil:
		text = fmt.Sprintf("unknown (%s at unknown prices)", english.Count(s.Calls, "call"))
	default:
		text = fmt.Sprintf("at least %s (%d of %s at unknown prices)", FormatUSD(s.CostUSD), s.Unpriced,
			english.Count(s.Calls, "call"))
	}
	if s.WorstCase > 0 {
		text += fmt.Sprintf(", %s counted at its worst case (its usage never came)", english.Count(s.WorstCase, "call"))
	}
	return text
}

// FormatUSD writes a cost as every text and page shows it, or "unknown" for nil: never $0 for
// a cost that is not known.
func FormatUSD(v *float64) string {
	switch {
	case v == nil:
		return "unknown"
	case *v == 0:
		return "$0"
	case *v < 1:
		return fmt.Sprintf("$%.3f", *v)
	default:
		return fmt.Sprintf("$%.2f", *v)
	}
}

// Charge records one model call in the ledger and syncs it to disk before it returns, so a
// call's spend survives a crash of the run; a failed write leaves the file as it was.
func (f *Folder) Charge(c Charge) error {
	line, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode the spend of %s repeat %d: %w", c.Task, c.Repeat, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return appendSynced(&f.spend, filepath.Join(f.Dir, SpendFile), append(line, '\n'))
}

// StartLedger creates the empty ledger of a new run, so that a run that made no call yet reads
// as having spent nothing rather than as a folder written before the ledger was kept.
func (f *Folder) StartLedger() error {
	file, err := os.OpenFile(filepath.Join(f.Dir, SpendFile), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err // an os error names the file and what failed
	}
	return file.Close()
}

// CarryLedgers appends the lines of the ledgers of the run folders dirs (the shards a merge
// joins) whose episode take accepts to the folder's, synced, so the joined run spent what its
// shards spent. A folder without a ledger has nothing to carry; its damaged lines are skipped,
// as Read skips them.
func (f *Folder) CarryLedgers(take func(Episode) bool, dirs ...string) error {
	if err := f.StartLedger(); err != nil {
		return err
	}
	buf, err := ledgerLines(take, dirs...)
	if err != nil || len(buf) == 0 {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return appendSynced(&f.spend, filepath.Join(f.Dir, SpendFile), buf)
}

// DropCharges replaces the folder's ledger with its lines whose episode drop refuses: a merge
// that completes a folder it wrote before replaces what it carried of an episode with what the
// shard that finished it spent on it in all.
func (f *Folder) DropCharges(drop func(Episode) bool) error {
	path := filepath.Join(f.Dir, SpendFile)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil // no ledger: the spend stays unknown
	}
	buf, err := ledgerLines(func(e Episode) bool { return !drop(e) }, f.Dir)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.spend != nil {
		err := f.spend.Close()
		f.spend = nil
		if err != nil {
			return fmt.Errorf("close %s: %w", SpendFile, err)
		}
	}
	return atomicfile.WriteFile(path, buf)
}

// Spent is what the folder's ledger sums to; nil when it has none.
func (f *Folder) Spent() (*Spend, error) {
	s, _, err := readSpend(f.Dir)
	return s, err
}

// ledgerLines are the lines of the ledgers of the run folders dirs whose episode take accepts.
func ledgerLines(take func(Episode) bool, dirs ...string) ([]byte, error) {
	var buf []byte
	for _, dir := range dirs {
		_, err := readLines(dir, SpendFile, maxSpendLine, func(line []byte) error {
			c, err := parseCharge(line)
			if err != nil {
				return err
			}
			if take(Episode{c.Task, c.Repeat}) {
				buf = append(append(buf, line...), '\n')
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return buf, nil
}

// maxSpendLine bounds a line of spend.jsonl (a real one is about 150 bytes).
const maxSpendLine = 64 << 10

// readSpend sums the ledger of the run folder dir; nil when the folder has none (written
// before the ledger was kept). Lines are read as readResults reads its own.
func readSpend(dir string) (*Spend, []string, error) {
	var s Spend
	warnings, err := readLines(dir, SpendFile, maxSpendLine, func(line []byte) error {
		c, err := parseCharge(line)
		if err == nil {
			s.Add(c)
		}
		return err
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return &s, warnings, nil
}

// parseCharge reads one line of spend.jsonl.
func parseCharge(line []byte) (Charge, error) {
	var c Charge
	if err := json.Unmarshal(line, &c); err != nil {
		return Charge{}, err
	}
	if c.Task == "" || c.Repeat < 1 {
		return Charge{}, fmt.Errorf("no task and repeat (task %q, repeat %d)", c.Task, c.Repeat)
	}
	return c, nil
}
