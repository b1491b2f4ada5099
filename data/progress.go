package data

import "time"

// Event is something a pull (or a verification) tells as it goes (PullOptions.Progress), from
// several goroutines at once: one of the types below. The command renders them.
type Event interface{ pullEvent() }

// PullPlanned tells what the pull covers: Files of Bytes in all, CachedFiles of CachedBytes
// of them already in the cache.
type PullPlanned struct {
	Files, CachedFiles int
	Bytes, CachedBytes int64
}

// PullBytes tells N more bytes were downloaded.
type PullBytes struct{ N int64 }

// PullFileDone tells a file's download ended: Downloaded bytes fetched by this pull, and Err
// when it failed.
type PullFileDone struct {
	Path       string
	Downloaded int64
	Err        error
}

// PullRetry tells a request to URL failed (Err) and its Attempt is retried after Wait.
type PullRetry struct {
	URL     string
	Attempt int
	Wait    time.Duration
	Err     error
}

func (PullPlanned) pullEvent()  {}
func (PullBytes) pullEvent()    {}
func (PullFileDone) pullEvent() {}
func (PullRetry) pullEvent()    {}

// tell hands e to the pull's progress, if any.
func (o PullOptions) tell(e Event) {
	if o.Progress != nil {
		o.Progress(e)
	}
}

// onRetry is the Hub client's retry hook that tells the pull's progress, nil when there is
// none.
func (o PullOptions) onRetry() func(url string, attempt int, wait time.Duration, err error) {
	if o.Progress == nil {
		return nil
	}
	return func(url string, attempt int, wait time.Duration, err error) {
		o.Progress(PullRetry{URL: url, Attempt: attempt, Wait: wait, Err: err})
	}
}

// onBytes is the Hub client's download hook that tells the pull's progress, nil when there is
// none.
func (o PullOptions) onBytes() func(n int64) {
	if o.Progress == nil {
		return nil
	}
	return func(n int64) { o.Progress(PullBytes{N: n}) }
}
