package loadgen

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// The open-loop run on an io_uring: load's twin (loadgen.go), with the same
// schedule, the same requests and the same verification (verify). What
// differs is only how the bytes reach the kernel: every loop turn queues a
// SEND for each request that came due and a RECV for each receive that
// completed, and one io_uring_enter submits them all and collects what
// completed.
//
// Every request is a SEND of its own, as it is a write of its own on the
// epoll path: the server sees the same stream of messages, never a batch
// the generator made. Order on a connection: a connection has at most one
// SEND in flight, and it carries MSG_WAITALL, so its completion is the
// whole request or an error, never a short send that a later one could
// overtake. A SEND normally completes inside the io_uring_enter that
// submitted it (one that does not is waiting for room in a full socket
// buffer). A request that comes due while an earlier one of its connection
// is unsent waits, to go out as a SEND of its own once the earlier one
// completed: in the same turn, after another io_uring_enter, unless the
// socket buffer is full. Those that find a send of their connection still
// in flight at the start of a turn (a full socket buffer) are counted in
// Report.Queued, as the epoll path counts what it appends behind unsent
// bytes.
//
// (Several SENDs per connection per turn, linked with IOSQE_IO_LINK to keep
// them in order, were tried and are slower: with DEFER_TASKRUN the kernel
// issues each link after the first from task work, one link per
// io_uring_enter, so a chain of k takes k turns.)
//
// Every connection has one RECV armed from the start to the end of the
// run, into its own buffer; a completed one is verified and re-armed.

// User data of an SQE: the connection's index, shifted, and the kind.
const (
	udRecv = 0
	udSend = 1
)

// ringRecvBuf is the receive buffer per connection: 16 KiB up to 64
// connections, less beyond, so that c=16384 costs 8 MiB, not 256 MiB (a
// smaller buffer only means more receives).
func ringRecvBuf(conns int) int {
	return min(16<<10, max(512, (1<<20)/conns))
}

// loadRing is the run on r. It leaves nothing in flight when it returns:
// the kernel writes into the connections' buffers only while it runs.
func loadRing(cfg Config, conns []*conn, r *ring, p part, deadline time.Time, rep *Report) (err error) {
	inFlight := 0 // SQEs queued or submitted whose completion is not reaped
	queue := func(op uint8, k int, buf []byte, flags uint32) error {
		kind := uint64(udRecv)
		if op == uringOpSend {
			kind = udSend
		}
		if err := r.queue(op, conns[k].fd, buf, flags, uint64(k)<<1|kind); err != nil {
			// Cannot happen: the ring has a slot for every receive and
			// every send that may be in flight (see newRing's caller).
			return fmt.Errorf("connection %d: %w with %d entries in flight", k, err, inFlight)
		}
		inFlight++
		return nil
	}
	defer r.close()
	defer func() { // runs before close: the kernel must be done with the buffers
		if derr := drainRing(r, conns, p, &inFlight); err == nil {
			err = derr
		}
	}()
	for k, c := range conns {
		if !p.owns(k) {
			continue
		}
		c.rbuf = make([]byte, ringRecvBuf(len(conns)))
		c.sendBuf = make([]byte, cfg.Size)
		if err := queue(uringOpRecv, k, c.rbuf, 0); err != nil {
			return err
		}
	}
	n, mine := cfg.Requests, p.requests(cfg.Requests)
	interval := 1e9 / cfg.Rate
	var listed []int // connections with unsent requests
	t0 := p.t0
	next, done := p.first, 0
	var last, now time.Duration
	cqes := 0 // completions reaped, for the idle count
	onCQE := func(e uringCQE) error {
		cqes++
		inFlight--
		k := int(e.userData >> 1)
		c := conns[k]
		if e.userData&1 == udSend {
			c.sends--
			if e.res < 0 {
				return fmt.Errorf("connection %d: %w", k, ioError(c, "send", unix.Errno(-e.res)))
			}
			if int(e.res) != cfg.Size {
				// MSG_WAITALL: the kernel sends all or fails.
				return fmt.Errorf("connection %d: a send of %d bytes completed with %d", k, cfg.Size, e.res)
			}
			return nil
		}
		switch {
		case e.res == 0:
			return fmt.Errorf("connection %d: %s", k, serverClosed(c))
		case e.res == -int32(unix.EINTR) || e.res == -int32(unix.EAGAIN):
			// Not a reply: arm again.
		case e.res < 0:
			return fmt.Errorf("connection %d: %w", k, ioError(c, "recv", unix.Errno(-e.res)))
		default:
			got, err := verify(c, c.rbuf[:e.res], cfg.Size, interval, now, rep)
			if err != nil {
				return fmt.Errorf("connection %d: %w", k, err)
			}
			done += got
			if got > 0 {
				last = now
			}
		}
		return queue(uringOpRecv, k, c.rbuf, 0)
	}
	for done < mine {
		now = time.Since(t0)
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v with %d of %d replies (the server is too slow for -rate %v, or stuck)", cfg.Timeout, done, mine, cfg.Rate)
		}
		if err := p.stopped(); err != nil {
			return err
		}
		turn, sends0, cqes0 := now, rep.Sends, cqes
		// Every request that is due joins its connection's unsent ones
		// (load's twin writes it at once).
		for next < n && intended(next, interval) <= now {
			lag := int64(now - intended(next, interval))
			rep.MaxSendLagNs = max(rep.MaxSendLagNs, lag)
			k := next % len(conns)
			c := conns[k]
			if c.sends > 0 {
				rep.Queued++
			}
			c.inflight = append(c.inflight, next)
			if !c.listed {
				c.listed = true
				listed = append(listed, k)
			}
			next += p.stride
		}
		// Queue the oldest unsent request of every connection with no
		// send in flight, enter, reap; again while that leaves a
		// connection with an unsent request and no send in flight (two of
		// its requests fell due in one turn), so that every due request
		// is handed to the kernel in this turn, each in a SEND of its own,
		// unless its connection's socket buffer is full.
		for again := true; again; {
			again = false
			kept := listed[:0]
			for _, k := range listed {
				c := conns[k]
				if c.sends == 0 {
					j := c.inflight[c.unsent]
					for i := range c.sendBuf {
						c.sendBuf[i] = RequestByte(j, i)
					}
					if err := queue(uringOpSend, k, c.sendBuf, unix.MSG_WAITALL); err != nil {
						return err
					}
					c.sends++
					c.unsent++
					rep.Sends++
				}
				if c.unsent < len(c.inflight) {
					kept = append(kept, k)
				} else {
					c.listed = false
				}
			}
			listed = kept
			if err := r.enter(); err != nil {
				return err
			}
			rep.Syscalls++
			now = time.Since(t0) // the arrival time of what the enter completed
			if err := r.reap(onCQE); err != nil {
				return err
			}
			for _, k := range listed {
				again = again || conns[k].sends == 0
			}
		}
		if rep.Sends == sends0 && cqes == cqes0 {
			rep.IdleNs += int64(now - turn)
		}
	}
	rep.Requests = mine
	rep.ElapsedNs = int64(last)
	return nil
}

// drainRing ends what is in flight on r: it shuts every connection down
// (its armed receive completes with 0 or an error, a waiting send with an
// error) and reaps until nothing is left, so that the kernel holds no
// buffer of a connection once the run returns.
func drainRing(r *ring, conns []*conn, p part, inFlight *int) error {
	for k, c := range conns {
		if p.owns(k) {
			unix.Shutdown(c.fd, unix.SHUT_RDWR)
		}
	}
	// The shutdowns' wake-ups queued the completions; they run within
	// io_uring_enter. A second is far more than loopback needs.
	end := time.Now().Add(time.Second)
	for *inFlight > 0 {
		if time.Now().After(end) {
			return fmt.Errorf("io_uring: %d operations still in flight a second after shutting the connections down", *inFlight)
		}
		if err := r.enter(); err != nil {
			return err
		}
		r.reap(func(uringCQE) error { *inFlight--; return nil })
	}
	return nil
}
