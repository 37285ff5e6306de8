package stackful

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// DefaultStackSize is the fiber stack mapping size when Options.StackSize is 0.
const DefaultStackSize = 64 << 10

// mmapStacks is a free list of mmap'd stacks, one mapping per stack.
type mmapStacks struct {
	size int // mapping size, a multiple of the page size
	free []stack
	all  [][]byte
}

func newStackSource(o Options) (stackSource, error) {
	size := o.StackSize
	if size == 0 {
		size = DefaultStackSize
	}
	page := unix.Getpagesize()
	size = (size + page - 1) &^ (page - 1)
	return &mmapStacks{size: size}, nil
}

func (m *mmapStacks) get() (stack, error) {
	if n := len(m.free); n > 0 {
		st := m.free[n-1]
		m.free = m.free[:n-1]
		return st, nil
	}
	mem, err := unix.Mmap(-1, 0, m.size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return stack{}, fmt.Errorf("stackful: mmap of a %d-byte fiber stack: %w", m.size, err)
	}
	m.all = append(m.all, mem)
	lo := uintptrOf(mem)
	// hi-lo must not be a power of two (fiber.Context.Init): drop 16 bytes.
	return stack{lo: lo, hi: lo + uintptr(m.size) - 16}, nil
}

func (m *mmapStacks) put(st stack) { m.free = append(m.free, st) }

func (m *mmapStacks) close() {
	for _, mem := range m.all {
		unix.Munmap(mem)
	}
	m.all, m.free = nil, nil
}
