package ratelimit

import (
	"time"
)

// A quota paces one dimension of a provider's limits (requests, or tokens) so that both ways
// providers enforce a limit of N a minute accept it: a token bucket refilled continuously
// (Anthropic's documented algorithm) and a sliding window of 60 s. A call needs:
//
//   - the pace: a bucket holding one second's worth of N and refilled at N a minute and
//     paceSlack more, so that a minute's quota goes out spread over the minute, never in one
//     burst, which a window (and OpenAI, which may enforce a minute's limit over shorter
//     periods) would refuse;
//   - and the window: what was sent in the last minute, as the quota remembers it, stays
//     within N. Anything a 60 s window accepts, a bucket of N refilled at N a minute accepts
//     too, so this rule is accepted by both ways. Alone it would give up a token bucket's
//     first minute, worth 1/(M+1) of an M-minute run; hence, in its place,
//   - or what the provider says is left: when its answers say more is left than the window
//     allows (a token bucket's first minute, or its refill during a lull), the pace may spend
//     it. A window never says more is left than the window rule allows, so this rule costs it
//     nothing, and a token bucket is used in full, at the pace.
//
// What the quota remembers is corrected with the usage each answer reports, and with what
// the provider says is left of its limit (reconcile): usage it counts that this run does not
// see (another run on the same key, a provider charging a reply's maximum up front) is
// charged as if sent, until the provider says it is forgotten.
type quota struct {
	given, learnt int64 // a minute: by flag, as the provider states it; 0 none
	origin        time.Time
	pace          bucket
	// sent holds what was charged in each of the last ringSlots slots, by slot number modulo
	// ringSlots; head is the newest slot it holds, inWindow the sum of slots head-slotsPerMinute
	// to head.
	sent     [ringSlots]int64
	head     int64
	inWindow int64
	// stated is what the provider last said is left, less what was charged since; statedAt
	// the slot of the call whose answer said it; -1: the provider has said nothing.
	stated, statedAt int64
}

// slotsPerMinute is how finely a quota remembers when it spent: to a tenth of a second. It
// takes a provider's minute to hold the last slotsPerMinute+1 slots, so nothing is forgotten
// early; the cost is forgetting up to a tenth of a second late (0.2% of the limit).
const slotsPerMinute = 600

// slotWidth is the time one slot covers.
const slotWidth = time.Minute / slotsPerMinute

// ringSlots is how far back a quota remembers: two minutes, so that for an answer to a call
// sent up to a minute before, it can tell what the provider may have counted since a minute
// before that call.
const ringSlots = 2*slotsPerMinute + 2

func newQuota(given int64, origin time.Time) quota {
	return quota{given: given, origin: origin, pace: newBucket(given, origin), stated: -1}
}

// limit is the limit in force a minute; 0 none.
func (q *quota) limit() int64 {
	return InForce{Given: q.given, Learnt: q.learnt}.PerMinute()
}

// learn adopts a limit the provider stated, at now.
func (q *quota) learn(limit int64, now time.Time) {
	q.learnt = limit
	q.pace.setRate(q.limit(), now)
}

// slotOf is the number of the slot holding t.
func (q *quota) slotOf(t time.Time) int64 { return max(int64(t.Sub(q.origin)/slotWidth), 0) }

// slotStart is when slot n begins.
func (q *quota) slotStart(n int64) time.Time { return q.origin.Add(time.Duration(n) * slotWidth) }

func ring(n int64) int64 { return (n%ringSlots + ringSlots) % ringSlots }

// advance moves the quota on to the slot holding now: slots a minute old leave the window,
// and the ring's oldest are cleared for new ones.
func (q *quota) advance(now time.Time) {
	n := q.slotOf(now)
	if n-q.head >= ringSlots {
		clear(q.sent[:])
		q.head, q.inWindow = n, 0
		return
	}
	for q.head < n {
		q.head++
		q.inWindow -= q.sent[ring(q.head-slotsPerMinute-1)]
		q.sent[ring(q.head)] = 0
	}
}

// record charges n to slot m, if the ring still holds it (a slot it no longer holds has left
// the window long ago).
func (q *quota) record(m, n int64) {
	if m <= q.head-ringSlots || m > q.head {
		return
	}
	q.sent[ring(m)] += n
	if m >= q.head-slotsPerMinute {
		q.inWindow += n
	}
}

// wait is how long until n may be sent: 0 now. The pace must allow it, and the window or
// what the provider says is left (only when the limit in force is the provider's: a lower
// flag is the user's word); something bigger than the whole limit waits for an empty window.
// The quota has been advanced to now. An answer may allow it sooner than the wait says, by
// stating more is left.
func (q *quota) wait(now time.Time, n int64) time.Duration {
	limit := q.limit()
	if limit == 0 {
		return 0
	}
	wait := q.pace.wait(now, n)
	excess := q.inWindow + min(n, limit) - limit
	if excess <= 0 || (q.stated >= n && q.learnt == limit) {
		return wait
	}
	m, freed := q.head-slotsPerMinute, int64(0)
	for ; m < q.head; m++ {
		if freed += q.sent[ring(m)]; freed >= excess {
			break
		}
	}
	// Slot m leaves the window when the head moves past m+slotsPerMinute.
	return max(wait, q.slotStart(m+slotsPerMinute+1).Sub(now))
}

// take charges n sent now: the quota has been advanced to now.
func (q *quota) take(n int64) {
	q.record(q.head, n)
	q.pace.charge(n)
	if q.stated >= 0 {
		q.stated = max(q.stated-n, 0)
	}
}

// correct charges the difference between a call's use, as its answer reports it, and what
// was charged for it in slot m. What the provider said is left changes only for calls it had
// not counted then: sent after the call whose answer said it (in the same slot, counted or
// not, only when the difference takes more).
func (q *quota) correct(m, diff int64) {
	q.record(m, diff)
	q.pace.charge(diff)
	if q.stated >= 0 && (m > q.statedAt || (m == q.statedAt && diff > 0)) {
		q.stated = max(q.stated-diff, 0)
	}
}

// reconcile takes in what the provider says is left of its limit, answering a call sent in
// slot m that was charged own, as providers count it when the call arrives.
//
// Less what was charged since the call, it is what the provider would still accept: wait
// allows a call that fits in it even when the window does not (a token bucket's first minute).
// An answer to an older call than the last one that said it is staler, and left out.
//
// Compared with what this quota has charged and the provider may still have counted (all
// from a minute before the call on), less left means usage this run does not see, charged
// now; it is forgotten when the provider says its limit is whole again (reset; -1 unknown: in
// a minute, as a window forgets). The quota has been advanced to now.
func (q *quota) reconcile(now time.Time, m, own, remaining int64, reset time.Duration) {
	from := m - slotsPerMinute
	if q.learnt == 0 || remaining < 0 || from <= q.head-ringSlots {
		return // no limit to compare with, or the call took over a minute: the statement is stale
	}
	var counted, since int64
	for s := from; s <= q.head; s++ {
		counted += q.sent[ring(s)]
		if s >= m {
			since += q.sent[ring(s)]
		}
	}
	if m >= q.statedAt {
		// Calls in the call's own slot may have come after it: they count as not counted.
		q.stated, q.statedAt = max(remaining-(since-own), 0), m
	}
	unseen := q.learnt - counted - remaining
	if unseen <= 0 {
		return
	}
	at := q.head
	if reset >= 0 {
		// The slot that leaves the window once the reset has passed, not before.
		end := now.Add(reset).Sub(q.origin)
		at = min(max(int64((end+slotWidth-1)/slotWidth)-slotsPerMinute-1, q.head-slotsPerMinute), q.head)
	}
	q.record(at, unseen)
}

// bucketScale is the pace bucket's fixed-point unit: a token is worth this many, and a bucket
// refilled at R tokens a minute gains R units a microsecond. Integers keep waits exact: after
// waiting what wait said, the tokens are there.
const bucketScale = int64(time.Minute / time.Microsecond)

// paceBurst is what a pace bucket holds when full: a second's worth of the limit.
const paceBurst = time.Second

// paceSlack is how much faster than the limit's average rate a pace bucket refills, in
// percent: after a lull (episodes busy with their commands) calls catch up on the quota the
// window still holds, without a burst.
const paceSlack = 10

// bucket is a token bucket holding a second's worth of a limit a minute and refilled a little
// faster than the limit (paceSlack). Charges may drive it below zero (a request bigger than
// the bucket, a reply longer than guessed): that debt is paid back by waiting, which spaces
// calls by their size.
type bucket struct {
	rate  int64 // units a microsecond; 0: no limit
	full  int64 // units
	level int64
	last  time.Time
}

func newBucket(perMinute int64, now time.Time) bucket {
	var b bucket
	b.setRate(perMinute, now)
	return b
}

// setRate paces the bucket to a limit of perMinute at now: it keeps what it holds, up to its
// new size, and starts full when it had no limit.
func (b *bucket) setRate(perMinute int64, now time.Time) {
	b.refill(now)
	wasUnlimited := b.rate == 0
	b.rate, b.full, b.last = perMinute+perMinute*paceSlack/100, perMinute*int64(paceBurst/time.Microsecond), now
	if wasUnlimited {
		b.level = b.full
	}
	b.level = min(b.level, b.full)
}

// refill adds what has flowed in since the last refill.
func (b *bucket) refill(now time.Time) {
	micros := int64(now.Sub(b.last) / time.Microsecond)
	if b.rate == 0 || micros <= 0 {
		return
	}
	if toFull := (b.full - b.level + b.rate - 1) / b.rate; micros >= toFull {
		b.level, b.last = b.full, now
		return
	}
	b.level += b.rate * micros
	b.last = b.last.Add(time.Duration(micros) * time.Microsecond)
}

// wait is how long until n may be taken: 0 now. More than the bucket holds waits for a full
// bucket.
func (b *bucket) wait(now time.Time, n int64) time.Duration {
	if b.rate == 0 {
		return 0
	}
	b.refill(now)
	need := min(n*bucketScale, b.full) - b.level
	if need <= 0 {
		return 0
	}
	return time.Duration((need+b.rate-1)/b.rate) * time.Microsecond
}

// charge takes n, or gives -n back (never above full).
func (b *bucket) charge(n int64) {
	if b.rate == 0 {
		return
	}
	b.level = min(b.level-n*bucketScale, b.full)
}
