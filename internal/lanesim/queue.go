package lanesim

import (
	"container/list"
	"sync"
)

// fifo is a counting semaphore over the generation slots that grants slots
// strictly in arrival order.
type fifo struct {
	mu      sync.Mutex
	slots   int
	free    int
	waiters list.List // of *ticket, oldest first
}

// ticket is one place in the queue. ready is closed when the slot is granted.
type ticket struct {
	ready chan struct{}
	elem  *list.Element // its place among the waiters, nil once granted; guarded by fifo.mu
}

// join takes a place at the back of the queue.
func (q *fifo) join() *ticket {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := &ticket{ready: make(chan struct{})}
	if q.free > 0 && q.waiters.Len() == 0 {
		q.free--
		close(t.ready)
		return t
	}
	t.elem = q.waiters.PushBack(t)
	return t
}

// leave withdraws a ticket; a granted one hands its slot on.
func (q *fifo) leave(t *ticket) {
	q.mu.Lock()
	if t.elem != nil {
		q.waiters.Remove(t.elem)
		q.mu.Unlock()
		return
	}
	q.mu.Unlock()
	q.release()
}

// release frees a granted slot: it goes to the oldest waiter, if any.
func (q *fifo) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if front := q.waiters.Front(); front != nil {
		t := q.waiters.Remove(front).(*ticket)
		t.elem = nil
		close(t.ready)
		return
	}
	q.free++
}

// counts returns the busy slots and the number of waiting tickets.
func (q *fifo) counts() (busy, waiting int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.slots - q.free, q.waiters.Len()
}
