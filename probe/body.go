package probe

import (
	"compress/gzip"
	"io"
)

// capReader fails with ErrTooLarge once more than max bytes went through.
// Its errors are sticky: bufio hands a read error out only once, and a
// peek must not swallow it.
type capReader struct {
	r   io.Reader
	n   int64
	max int64
	err error
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if room := c.max - c.n + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		n, err = n-int(c.n-c.max), ErrTooLarge
	}
	c.err = err
	return n, err
}

// gunzip opens the gzip stream on first Read, so that waiting for its header
// is part of reading the stream (and of its timeout).
type gunzip struct {
	r io.Reader
	z *gzip.Reader
}

func (g *gunzip) Read(p []byte) (int, error) {
	if g.z == nil {
		z, err := gzip.NewReader(g.r)
		if err != nil {
			return 0, err
		}
		g.z = z
	}
	return g.z.Read(p)
}
