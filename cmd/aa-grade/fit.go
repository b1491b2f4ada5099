package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/aa-grade/aa-grade/internal/termtext"
)

// table is a command's text table, which fits the terminal as run's totals do: columns when
// its widest line fits (always when the output is no terminal, cols 0: pipes and files keep
// the table), else folded, a block a row: its first cell, then each other cell after its
// column's name, wrapped at word boundaries.
type table struct {
	header []string
	rows   [][]string
}

func newTable(header ...string) *table { return &table{header: header} }

// row adds a row, a cell a column.
func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the table to w, cols columns wide (0: any width).
func (t *table) write(w io.Writer, cols int) {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush() // a bytes.Buffer takes every write
	if cols <= 0 || widestLine(b.String()) < cols {
		_, _ = w.Write(b.Bytes()) // as a plain table: a failed write to stdout has nowhere to be told
		return
	}
	var folded strings.Builder
	for _, r := range t.rows {
		fmt.Fprintln(&folded, r[0])
		for i := 1; i < min(len(r), len(t.header)); i++ {
			if strings.TrimSpace(r[i]) != "" {
				fmt.Fprintf(&folded, "  %s: %s\n", t.header[i], r[i])
			}
		}
	}
	fitText(w, folded.String(), cols)
}

// fitText prints text to w with each line wider than the terminal (cols; 0: none is)
// wrapped at word boundaries, its later lines indented two more than its first, so that no
// word is broken in two at the terminal's edge.
func fitText(w io.Writer, text string, cols int) {
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		body := strings.TrimSuffix(line, "\n")
		if cols <= 0 || widestLine(body) < cols {
			b.WriteString(line)
			continue
		}
		trimmed := strings.TrimLeft(body, " ")
		indent := body[:len(body)-len(trimmed)]
		for _, l := range termtext.Wrap(trimmed, max(cols-1-len(indent), 20), "  ") {
			b.WriteString(indent + l + "\n")
		}
	}
	_, _ = io.WriteString(w, b.String()) // a failed write to the terminal has nowhere to be told
}

// warnLine prints a line as printLine does, wrapped at word boundaries to w's terminal.
func warnLine(w io.Writer, format string, args ...any) {
	fitText(w, termtext.Sanitize(fmt.Sprintf(format, args...))+"\n", columns(w))
}
