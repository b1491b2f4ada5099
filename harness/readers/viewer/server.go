package viewer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/vocab/atif"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

var (
	// ErrNotLoopback marks an address the viewer will not listen on: it serves run folders,
	// which hold whatever a model and its commands wrote, to this machine only.
	ErrNotLoopback = errors.New("not a loopback address")
	// ErrAddrForm marks an address in none of the forms Listen reads.
	ErrAddrForm = errors.New("want HOST:PORT, :PORT or PORT")
)

// Listen listens on addr (see CheckAddr).
func Listen(addr string) (net.Listener, error) {
	hostPort, err := CheckAddr(addr)
	if err != nil {
		return nil, err
	}
	return net.Listen("tcp", hostPort)
}

// ListenOn listens on the port of addr (see CheckAddr) at host, any address of this machine's
// (0.0.0.0: all of them): what the user chose to open beyond loopback. Public says the address
// reaches beyond this machine, for the command's warning.
func ListenOn(host, addr string) (ln net.Listener, public bool, err error) {
	hostPort, err := CheckAddr(addr)
	if err != nil {
		return nil, false, err
	}
	_, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return nil, false, err
	}
	ln, err = net.Listen("tcp", net.JoinHostPort(host, port))
	return ln, host != "localhost" && !isLoopback(host), err
}

// CheckAddr reads addr (HOST:PORT, :PORT or PORT; the host 127.0.0.1 when none is given) as the
// HOST:PORT to listen on, refusing any host that is not a loopback address or localhost, and a
// port that is not one: a command checks it before reading anything.
func CheckAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if _, convErr := strconv.Atoi(addr); convErr != nil {
			return "", fmt.Errorf("%q: %w", addr, ErrAddrForm)
		}
		host, port = "", addr
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("%q: %w, the port 0 to 65535", addr, ErrAddrForm)
	}
	switch {
	case host == "" || host == "localhost":
		host = "127.0.0.1"
	case !isLoopback(host):
		return "", fmt.Errorf("%q: %w: the viewer serves only this machine (127.0.0.1, ::1, localhost)", addr, ErrNotLoopback)
	}
	return net.JoinHostPort(host, port), nil
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// securityHeaders are sent with every answer: the page policy again (a header also covers
// what a meta tag cannot: framing), no sniffing of types, no referrer to anywhere.
var securityHeaders = map[string]string{
	"Content-Security-Policy": policy + "; frame-ancestors 'none'",
	"X-Content-Type-Options":  "nosniff",
	"Referrer-Policy":         "no-referrer",
	"X-Frame-Options":         "DENY",
	"Cache-Control":           "no-cache",
}

// ServeHTTP answers GET and HEAD for the pages and the raw trajectories; anything else is
// refused. A request must name this machine as its host: a web page elsewhere whose name
// resolves to 127.0.0.1 (DNS rebinding) gets nothing; unless the viewer serves the network
// (Options.Network), which any name of the machine reaches.
func (v *Viewer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for k, val := range securityHeaders {
		w.Header().Set(k, val)
	}
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = strings.Trim(r.Host, "[]") // no port: the scheme's default
	}
	if !v.opts.Network && host != "localhost" && !isLoopback(host) {
		http.Error(w, "this viewer answers only requests to 127.0.0.1, [::1] or localhost", http.StatusMisdirectedRequest)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "read-only: only GET and HEAD", http.StatusMethodNotAllowed)
		return
	}
	p := strings.TrimPrefix(r.URL.Path, "/")
	if p == "" {
		p = "index.html"
	}
	switch err := v.serve(r.Context(), w, r, p); {
	case errors.Is(err, errNotFound):
		writeNotFound(w, r.URL.Path)
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// writeNotFound answers a path the viewer has no page for with a page of its own: a link
// opened from an old page, or typed, leads back to the runs rather than to a bare line.
func writeNotFound(w http.ResponseWriter, p string) {
	var b bytes.Buffer
	if err := render(&b, "notfound", p); err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write(b.Bytes()) // fails when the browser has gone: no one to tell
}

var errNotFound = errors.New("not found")

// serve answers one path of the pages' tree: index.html, runs/N/TASK/R.html, or the raw
// trajectory beside an episode's page.
func (v *Viewer) serve(ctx context.Context, w http.ResponseWriter, r *http.Request, p string) error {
	if p == "index.html" {
		runs, tag, live, err := v.loadAll()
		if err != nil {
			return err
		}
		if notModified(w, r, tag) {
			return nil
		}
		page := v.buildIndex(runs)
		if live {
			page.Live = tag
		}
		return writePage(w, "runs", page)
	}
	if strings.HasPrefix(p, "atif/") {
		return v.serveATIF(w, p)
	}
	l, i, file, err := v.locate(p)
	if err != nil {
		return err
	}
	e := l.eps[i]
	if file != "" {
		return v.serveTrajectory(w, r, l, e, file)
	}
	tag := etag(strconv.FormatBool(l.live), version(l.root, runfolder.ResultsFile,
		path.Join(e.dir(), runfolder.TrajectoryFile), path.Join(e.dir(), runfolder.TrajectoryFile+".zst"),
		path.Join(e.dir(), grader.SubmissionFile)))
	if notModified(w, r, tag) {
		return nil
	}
	page := v.buildEpisodePage(ctx, l, i)
	if page.Running {
		page.Live = tag
	}
	return writePage(w, "episode", page)
}

// loadAll reads every run as it stands, with the version of what was read.
func (v *Viewer) loadAll() (runs []*loaded, tag string, live bool, err error) {
	var tags []string
	for _, s := range v.runs {
		l, err := s.load()
		if err != nil {
			return nil, "", false, fmt.Errorf("%s: %w", s.dir, err)
		}
		runs = append(runs, l)
		live = live || l.live
		tags = append(tags, version(s.root, runfolder.HeaderFile, runfolder.ResultsFile), strconv.FormatBool(l.live))
		if l.live { // the grid marks running episodes
			for _, e := range l.eps {
				if _, ok := l.results[runfolder.Episode{Task: e.Task, Repeat: e.Repeat}]; !ok {
					tags = append(tags, strconv.FormatBool(l.hasPlainTrajectory(e)))
				}
			}
		}
	}
	return runs, etag(tags...), live, nil
}

// locate finds the run and episode a path names: only the episodes the run's files list, so
// no path reaches anything else.
func (v *Viewer) locate(p string) (l *loaded, i int, file string, err error) {
	parts := strings.Split(p, "/")
	if len(parts) != 4 || parts[0] != "runs" {
		return nil, 0, "", errNotFound
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 1 || n > len(v.runs) || strconv.Itoa(n) != parts[1] {
		return nil, 0, "", errNotFound
	}
	l, err = v.runs[n-1].load()
	if err != nil {
		return nil, 0, "", err
	}
	name := parts[3]
	repeat, rest, _ := strings.Cut(name, ".")
	if rest != "html" {
		file = rest // repeat.trajectory.jsonl[.zst]
		name = repeat + ".html"
	}
	i, ok := l.byPath[path.Join(parts[0], parts[1], parts[2], name)]
	if !ok || (file != "" && file != runfolder.TrajectoryFile && file != runfolder.TrajectoryFile+".zst") {
		return nil, 0, "", errNotFound
	}
	return l, i, file, nil
}

// serveTrajectory sends an episode's raw trajectory as it is on disk, to download.
func (v *Viewer) serveTrajectory(w http.ResponseWriter, r *http.Request, l *loaded, e episodeRef, file string) error {
	f, err := safefile.Open(l.root, path.Join(e.dir(), file))
	if err != nil {
		return fmt.Errorf("%w: %v", errNotFound, err)
	}
	defer func() { _ = f.Close() }() // read only
	info, err := f.Stat()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", strconv.Itoa(e.Repeat)+"."+file))
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, "", info.ModTime(), f)
	return nil
}

// serveATIF answers the page of an ATIF document, or the document itself to download.
func (v *Viewer) serveATIF(w http.ResponseWriter, p string) error {
	s, i, raw, err := v.locateATIF(p)
	if err != nil {
		return err
	}
	f, err := s.found()
	if err != nil {
		return err
	}
	if i >= len(f.Episodes) {
		return errNotFound // only a document the source's layout finds
	}
	if !raw {
		return writePage(w, "atif", s.buildATIFPage(f, i))
	}
	b, err := safefile.ReadPath(f.Episodes[i].Path, atif.MaxBytes)
	if err != nil {
		return fmt.Errorf("%w: %v", errNotFound, err)
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", strconv.Itoa(i+1)+".json"))
	w.Header().Set("Content-Type", "application/octet-stream")
	_, err = w.Write(b)
	return err
}

func notModified(w http.ResponseWriter, r *http.Request, tag string) bool {
	w.Header().Set("ETag", tag)
	if r.Header.Get("If-None-Match") == tag {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	return false
}

// writePage renders a page whole before sending it, so a failure is an error answer rather
// than half a page.
func writePage(w http.ResponseWriter, name string, data any) error {
	var b bytes.Buffer
	if err := render(&b, name, data); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, err := io.Copy(w, &b)
	return err
}
