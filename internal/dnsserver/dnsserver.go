// Package dnsserver is the DNS responder corobench's dns scenario and the
// semantic tests resolve against: a UDP server on 127.0.0.1 that serves a
// fixed synthetic zone, so every row resolves the same names the same way
// and nothing leaves the machine.
//
// The zone: Name(i) ("host-i.corobench.test.", 0 <= i < Names) has one A
// record, Addr(i); its AAAA query gets an empty answer (Go's resolver asks
// both). Names under Silent are never answered (for timeout tests); every
// other name is NXDOMAIN. The server answers from one goroutine; Main runs
// it as a process of its own (benchrun's hidden dns-responder subcommand),
// so its work is charged to no row's Ps.
package dnsserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/internal/cpulist"
)

const (
	// Domain is the zone's suffix (a reserved test TLD, RFC 2606).
	Domain = "corobench.test."
	// Names is how many host names the zone has.
	Names = 1 << 16
	// Silent is the prefix of names the server never answers:
	// "silent.corobench.test.", "silent-x.corobench.test."...
	Silent = "silent"
	// TTL of every record, in seconds (Go's resolver does not cache, so it
	// matters only to a reader of the packets).
	TTL = 60
)

// Name returns the i-th host name of the zone (absolute: trailing dot, so
// no search list applies).
func Name(i int) string { return "host-" + strconv.Itoa(i) + "." + Domain }

// Addr returns the address Name(i) resolves to: 10.53.hi.lo, distinct for
// every i in [0, Names).
func Addr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 53, byte(i >> 8), byte(i)}) }

// lookup parses a question name of the zone: its index, or ok false.
func lookup(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "host-")
	if !ok {
		return 0, false
	}
	num, ok := strings.CutSuffix(rest, "."+Domain)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(num)
	if err != nil || i < 0 || i >= Names || strconv.Itoa(i) != num {
		return 0, false
	}
	return i, true
}

// Server is a running responder.
type Server struct {
	conn    net.PacketConn
	queries atomic.Int64
	done    chan struct{}
}

// Listen opens the server's socket on 127.0.0.1 (a port of the kernel's
// choosing) and starts answering on a goroutine of its own.
func Listen() (*Server, error) {
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("dnsserver: %w", err)
	}
	s := &Server{conn: c, done: make(chan struct{})}
	go s.serve()
	return s, nil
}

// Addr is the server's "127.0.0.1:port", the value for
// reactor.Options.DNSServer or a net.Resolver's Dial.
func (s *Server) Addr() string { return s.conn.LocalAddr().String() }

// Queries is how many queries the server has received (answered or not).
func (s *Server) Queries() int64 { return s.queries.Load() }

// Close stops the server and waits for its goroutine.
func (s *Server) Close() error {
	err := s.conn.Close()
	<-s.done
	return err
}

func (s *Server) serve() {
	defer close(s.done)
	// The answering goroutine keeps a thread of its own: in a process of
	// its own (Main) that changes nothing; in a test process it keeps the
	// server off whatever thread a runtime under test has locked.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, 1500)
	var out []byte
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		s.queries.Add(1)
		msg, ok := answer(buf[:n], out[:0])
		if !ok {
			continue
		}
		out = msg
		_, _ = s.conn.WriteTo(msg, from)
	}
}

// answer builds the response to query into out; ok false drops the query
// (malformed, or a Silent name).
func answer(query, out []byte) (msg []byte, ok bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	name := strings.ToLower(q.Name.String())
	if strings.HasPrefix(name, Silent) {
		return nil, false
	}
	i, known := lookup(name)
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(out, rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	if known && q.Type == dnsmessage.TypeA && q.Class == dnsmessage.ClassINET {
		rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: TTL}
		if b.AResource(rr, dnsmessage.AResource{A: Addr(i).As4()}) != nil {
			return nil, false
		}
	}
	msg, err = b.Finish()
	return msg, err == nil
}

// readyPrefix starts the line Main prints once it is serving.
const readyPrefix = "corobench-dns-responder "

// Main is the responder as a process: it listens, prints one line with its
// address on stdout, and answers until stdin reaches end of file (its
// parent closed the pipe or exited), then returns 0. It takes no
// arguments.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		fmt.Fprintf(stderr, "dns-responder: takes no arguments, got %q\n", args)
		return 2
	}
	s, err := Listen()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer s.Close()
	if _, err := fmt.Fprintln(stdout, readyPrefix+s.Addr()); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	_, _ = io.Copy(io.Discard, stdin)
	return 0
}

// Process is a responder running as a child process (Main).
type Process struct {
	cmd   *exec.Cmd
	stdin io.Closer
	addr  string
}

// Start runs argv (argv[0] is the path; the program must run Main) and
// waits up to 10 s for it to say where it listens. The child ends when
// Close closes its stdin, or when this process exits.
func Start(argv []string) (*Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("dnsserver: Start needs a command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := startAway(cmd); err != nil {
		return nil, fmt.Errorf("dnsserver: starting the responder %q: %w", argv, err)
	}
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- l
		_, _ = io.Copy(io.Discard, out)
	}()
	fail := func(why string) (*Process, error) {
		in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("dnsserver: the responder %q %s (stderr: %q)", argv, why, strings.TrimSpace(stderr.String()))
	}
	select {
	case l := <-line:
		addr, ok := strings.CutPrefix(strings.TrimSpace(l), readyPrefix)
		if !ok {
			return fail(fmt.Sprintf("printed %q, not its address", l))
		}
		return &Process{cmd: cmd, stdin: in, addr: addr}, nil
	case <-time.After(10 * time.Second):
		return fail("did not print its address within 10 s")
	}
}

// Addr is the responder's "127.0.0.1:port".
func (p *Process) Addr() string { return p.addr }

// Close stops the responder and reaps it.
func (p *Process) Close() error {
	p.stdin.Close()
	return p.cmd.Wait()
}

// startAway starts cmd on the online CPUs the calling thread may not run
// on, if there are any: benchrun pins a single-P row's cell process to one
// CPU, and the responder must not take its time from that CPU (an unpinned
// process, goroutine-multi's, shares every CPU with it, as with everything
// else on the machine). A child inherits the CPU mask of the thread that
// forks it, so the fork is made from a goroutine of its own, locked to its
// thread with the mask narrowed, which is never unlocked: the thread ends
// with the goroutine, and the responder is placed from its first
// instruction, every thread of it included.
func startAway(cmd *exec.Cmd) error {
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		return cmd.Start()
	}
	online, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return cmd.Start()
	}
	cpus, err := cpulist.Parse(strings.TrimSpace(string(online)))
	if err != nil {
		return cmd.Start()
	}
	var away unix.CPUSet
	for _, c := range cpus {
		if !mine.IsSet(c) {
			away.Set(c)
		}
	}
	if away.Count() == 0 {
		return cmd.Start()
	}
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		if err := unix.SchedSetaffinity(0, &away); err != nil {
			done <- fmt.Errorf("placing the responder off this process's CPUs: %w", err)
			return
		}
		done <- cmd.Start()
	}()
	return <-done
}
