package wsrec

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Opcodes of RFC 6455 section 5.2.
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// errFrame is a byte stream that is not RFC 6455 framing (or uses an
// extension that was not negotiated): what follows cannot be read.
var errFrame = errors.New("not a websocket frame")

// frameReader reads one direction of a socket as it is relayed: fed the
// bytes in whatever pieces the relay read them, it undoes the masking,
// joins fragmented messages and hands each whole one to message, and each
// control frame to control. It never sees the bytes again and never
// changes them; after an error it reads nothing more.
type frameReader struct {
	deflate bool // RSV1 marks a compressed message (permessage-deflate)

	hdr     [14]byte
	hdrN    int
	hdrNeed int // 2 until the length and mask sizes are known

	// The frame whose payload is being read.
	left   uint64 // payload bytes still to come
	opcode byte
	fin    bool
	masked bool
	key    [4]byte
	keyPos int

	ctl     []byte // a control frame's payload (at most 125 bytes)
	inMsg   bool   // a fragmented data message is in progress
	msg     message
	scratch []byte // unmasked payload bytes

	err error

	message func(m *message) error
	control func(opcode byte, masked bool, payload []byte) error
}

// message is a data message being joined: its first frame's opcode, and
// its payload as sent (compressed if RSV1 was set on the first frame).
type message struct {
	opcode     byte
	masked     bool
	compressed bool
	body       *assembly
}

// Write feeds the reader the next bytes of its direction. It returns the
// first error met (and that error for ever after); the count is always
// len(p), since the relay does not depend on it.
func (r *frameReader) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && r.err == nil {
		if r.hdrN < r.hdrNeed {
			c := copy(r.hdr[r.hdrN:r.hdrNeed], p)
			r.hdrN += c
			p = p[c:]
			if r.hdrN == r.hdrNeed {
				r.err = r.header()
			}
			continue
		}
		take := p
		if uint64(len(take)) > r.left {
			take = take[:r.left]
		}
		p = p[len(take):]
		r.left -= uint64(len(take))
		r.err = r.payload(take)
		if r.err == nil && r.left == 0 {
			r.err = r.frameEnd()
		}
	}
	return n, r.err
}

// header parses the frame header once hdrNeed bytes are in: after the
// first two it knows how many more there are.
func (r *frameReader) header() error {
	b0, b1 := r.hdr[0], r.hdr[1]
	if r.hdrNeed == 2 {
		need := 2
		switch b1 & 0x7f {
		case 126:
			need += 2
		case 127:
			need += 8
		}
		if b1&0x80 != 0 {
			need += 4
		}
		if need > 2 {
			r.hdrNeed = need
			return nil
		}
	}
	r.fin, r.opcode, r.masked = b0&0x80 != 0, b0&0x0f, b1&0x80 != 0
	rsv1 := b0&0x40 != 0
	pos := 2
	switch l := b1 & 0x7f; l {
	case 126:
		r.left = uint64(binary.BigEndian.Uint16(r.hdr[2:4]))
		pos = 4
	case 127:
		r.left = binary.BigEndian.Uint64(r.hdr[2:10])
		pos = 10
		if r.left>>63 != 0 {
			return fmt.Errorf("%w: 64-bit length with its top bit set", errFrame)
		}
	default:
		r.left = uint64(l)
	}
	if r.masked {
		copy(r.key[:], r.hdr[pos:pos+4])
	}
	r.keyPos = 0
	if err := r.check(rsv1); err != nil {
		return err
	}
	if r.opcode < opClose && r.opcode != opContinuation {
		r.inMsg = true
		r.msg = message{opcode: r.opcode, masked: r.masked, compressed: rsv1, body: r.msg.body}
		r.msg.body.reset()
	}
	if r.opcode >= opClose {
		r.ctl = r.ctl[:0]
	}
	if r.left == 0 {
		return r.frameEnd()
	}
	return nil
}

// check refuses what RFC 6455 (and RFC 7692 for RSV1) does not allow.
func (r *frameReader) check(rsv1 bool) error {
	switch {
	case r.hdr[0]&0x30 != 0:
		return fmt.Errorf("%w: RSV2 or RSV3 set", errFrame)
	case r.opcode > opBinary && r.opcode < opClose, r.opcode > opPong:
		return fmt.Errorf("%w: reserved opcode %#x", errFrame, r.opcode)
	case r.opcode >= opClose && (!r.fin || r.left > 125):
		return fmt.Errorf("%w: control frame fragmented or over 125 bytes", errFrame)
	case rsv1 && (!r.deflate || r.opcode == opContinuation || r.opcode >= opClose):
		return fmt.Errorf("%w: RSV1 set on a frame that cannot be compressed", errFrame)
	case r.opcode == opContinuation && !r.inMsg:
		return fmt.Errorf("%w: continuation frame without a message", errFrame)
	case (r.opcode == opText || r.opcode == opBinary) && r.inMsg:
		return fmt.Errorf("%w: new message before the last one ended", errFrame)
	}
	return nil
}

// payload takes the next bytes of the current frame's payload.
func (r *frameReader) payload(p []byte) error {
	if r.masked {
		if cap(r.scratch) < len(p) {
			r.scratch = make([]byte, min(max(len(p), 4<<10), 64<<10))
		}
		for len(p) > 0 {
			s := r.scratch[:min(len(p), cap(r.scratch))]
			for i := range s {
				s[i] = p[i] ^ r.key[r.keyPos&3]
				r.keyPos++
			}
			if err := r.take(s); err != nil {
				return err
			}
			p = p[len(s):]
		}
		return nil
	}
	return r.take(p)
}

func (r *frameReader) take(p []byte) error {
	if r.opcode >= opClose {
		r.ctl = append(r.ctl, p...)
		return nil
	}
	return r.msg.body.write(p)
}

// frameEnd is called when a frame's last payload byte is in.
func (r *frameReader) frameEnd() error {
	r.hdrN, r.hdrNeed = 0, 2
	if r.opcode >= opClose {
		return r.control(r.opcode, r.masked, r.ctl)
	}
	if !r.fin {
		return nil
	}
	r.inMsg = false
	return r.message(&r.msg)
}
