// Command boostcontext measures Boost.Context's fibers on this machine, as
// the same-machine peer for two of corobench's figures: the bare switch
// (Switch, ns/switch one-way) and a pooled fiber's whole life (Spawn
// alive=1, ns/spawn: create + run to completion + destroy). Published
// figures come from other machines (docs/design.md §8); a ratio against a
// peer is only worth quoting when both ran on the same CPU, so this program
// prints Go benchmark lines that benchstat reads beside benchrun's.
//
// Method, the same as benchrun's child process in small (docs/design.md
// §6): grow the iteration count until one run lasts at least 20 ms (the
// warm-up), make five timed runs with that count, and print the median of
// their per-operation times. One line per benchmark per process: run the
// program several times (a shell loop) for several samples, and pin it
// (taskset -c 1) as benchrun pins its cells. Every loop mixes its counter
// into a checksum that is checked against the closed form, so no loop can
// be optimised away, and a mismatch exits non-zero.
//
// Build (Debian: g++ libboost-context-dev):
//
//	g++ -O2 -std=c++17 -o /tmp/boostcontext peers/boostcontext/main.cpp -lboost_context
//
// Benchmarks:
//
//	BenchmarkPeerBoostContext/switch               ns/switch: a fiber and
//	    its caller resume each other, one mix each side; a round trip is 2.
//	BenchmarkPeerBoostContext/lifecycle/pool=warm  ns/spawn: one fiber at a
//	    time on a pooled_fixedsize_stack (64 KiB, corobench's pool size),
//	    created, run to its end (one mix) and destroyed; its stack goes
//	    back to the pool, from which the next one takes it.
//	BenchmarkPeerBoostContext/lifecycle/pool=cold  ns/spawn: the same on a
//	    protected_fixedsize_stack: every fiber maps a fresh stack (a guard
//	    page, a first-touch fault) and unmaps it at its end.
#include <boost/context/fiber.hpp>
#include <boost/context/pooled_fixedsize_stack.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace ctx = boost::context;

namespace {

// mix is corobench's checksum step (scenarios/bodies/pingpong.go, mix).
inline uint64_t mix(uint64_t sum, uint64_t v) { return (sum ^ v) * 0x100000001b3ULL; }

// mixSequence is the checksum of mixing 0, 1, ..., n-1 in order.
uint64_t mixSequence(uint64_t n) {
	uint64_t sum = 0;
	for (uint64_t i = 0; i < n; i++) sum = mix(sum, i);
	return sum;
}

int64_t nowNs() {
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

constexpr std::size_t kStackSize = 64 << 10; // stackpool.DefaultStackSize
constexpr int64_t kRunNs = 20000000;          // a timed run's least length, as benchrun's default (100 ms / 5 runs)
constexpr int kRuns = 5;                       // timed runs per process (driver.DefaultRuns)

// A loop runs n operations and returns their checksum, how many
// operations it timed (a switch round trip is two) and the time they took:
// each loop reads the clock itself, so that setting up and tearing down
// (the switch's fiber) stay outside the timed region.
struct Result {
	uint64_t sum;
	int64_t ops;
	int64_t ns;
};
using Loop = std::function<Result(int64_t n)>;

// switchLoop: n round trips between the caller (mixing 0, 2, ...) and a
// fiber (mixing 1, 3, ...): mixSequence(2n).
Result switchLoop(int64_t n) {
	uint64_t sum = 0;
	ctx::fiber f{std::allocator_arg, ctx::fixedsize_stack(kStackSize), [&sum, n](ctx::fiber&& caller) {
		             for (int64_t i = 0; i < n; i++) {
			             sum = mix(sum, uint64_t(2 * i + 1));
			             caller = std::move(caller).resume();
		             }
		             return std::move(caller);
	             }};
	int64_t t0 = nowNs();
	for (int64_t i = 0; i < n; i++) {
		sum = mix(sum, uint64_t(2 * i));
		f = std::move(f).resume();
	}
	int64_t ns = nowNs() - t0;
	// The fiber is now past its last mix, waiting to return: one more
	// resume lets it finish, and its stack is freed.
	f = std::move(f).resume();
	return {sum, 2 * n, ns};
}

// lifecycleLoop: n fibers one after another, each mixing its index:
// mixSequence(n).
template <typename StackAllocator>
Result lifecycleLoop(StackAllocator& salloc, int64_t n) {
	uint64_t sum = 0;
	int64_t t0 = nowNs();
	for (int64_t i = 0; i < n; i++) {
		ctx::fiber f{std::allocator_arg, salloc, [&sum, i](ctx::fiber&& caller) {
			             sum = mix(sum, uint64_t(i));
			             return std::move(caller);
		             }};
		f = std::move(f).resume(); // runs it to its end; the stack goes back to salloc
	}
	return {sum, n, nowNs() - t0};
}

// measure grows the count until a run lasts kRunNs, makes kRuns timed runs
// of it, checks each run's checksum, and prints the median as a Go
// benchmark line. false: a checksum did not match.
bool measure(const char* name, const char* unit, const Loop& loop, const std::function<uint64_t(int64_t)>& want) {
	int64_t n = 1;
	for (;;) {
		Result r = loop(n);
		int64_t el = r.ns;
		if (r.sum != want(n)) {
			std::fprintf(stderr, "%s: checksum %llu after %lld iterations, want %llu\n", name,
			             (unsigned long long)r.sum, (long long)n, (unsigned long long)want(n));
			return false;
		}
		if (el >= kRunNs) break;
		// As testing.B's predictN: aim 20% over, grow at most 100×.
		int64_t per = std::max<int64_t>(1, el / n);
		int64_t next = kRunNs / per;
		next += next / 5;
		n = std::max(n + 1, std::min(next, 100 * n));
	}
	std::vector<double> perOp;
	for (int k = 0; k < kRuns; k++) {
		Result r = loop(n);
		if (r.sum != want(n)) {
			std::fprintf(stderr, "%s: checksum mismatch in timed run %d\n", name, k);
			return false;
		}
		perOp.push_back(double(r.ns) / double(r.ops));
	}
	std::sort(perOp.begin(), perOp.end());
	std::printf("%s\t%lld\t%.2f %s\n", name, (long long)n, perOp[kRuns / 2], unit);
	return true;
}

// cpuName is /proc/cpuinfo's first model name, as Go's testing prints it on
// its cpu: line, so that benchstat keeps the peer's figures of one CPU
// apart from another's.
std::string cpuName() {
	std::ifstream in("/proc/cpuinfo");
	std::string line;
	while (std::getline(in, line)) {
		if (line.rfind("model name", 0) == 0) {
			auto colon = line.find(':');
			if (colon != std::string::npos) return line.substr(colon + 2);
		}
	}
	return "unknown";
}

} // namespace

int main() {
	std::printf("goos: linux\n");
	std::printf("pkg: corobench/peers/boostcontext\n");
	std::printf("cpu: %s\n", cpuName().c_str());
	ctx::pooled_fixedsize_stack pooled(kStackSize);
	ctx::protected_fixedsize_stack fresh(kStackSize);
	// One lifecycle before the timed ones leaves a stack in the pool, as
	// corobench's pool=warm runs one untimed lifecycle first.
	lifecycleLoop(pooled, 1);
	bool ok = measure("BenchmarkPeerBoostContext/switch", "ns/switch", switchLoop,
	                  [](int64_t n) { return mixSequence(uint64_t(2 * n)); });
	ok = measure("BenchmarkPeerBoostContext/lifecycle/pool=warm", "ns/spawn",
	             [&](int64_t n) { return lifecycleLoop(pooled, n); },
	             [](int64_t n) { return mixSequence(uint64_t(n)); }) && ok;
	ok = measure("BenchmarkPeerBoostContext/lifecycle/pool=cold", "ns/spawn",
	             [&](int64_t n) { return lifecycleLoop(fresh, n); },
	             [](int64_t n) { return mixSequence(uint64_t(n)); }) && ok;
	return ok ? 0 : 1;
}
