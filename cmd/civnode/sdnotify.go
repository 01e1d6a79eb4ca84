package main

import (
	"fmt"
	"net"
)

// notifyEnv names the service manager's notification socket (sd_notify(3)):
// systemd sets it for a unit of Type=notify.
const notifyEnv = "NOTIFY_SOCKET"

// notifyServiceManager sends state, newline-separated KEY=VALUE assignments
// such as "READY=1", to the socket $NOTIFY_SOCKET names; without it, it does
// nothing. A name starting with @ is in Linux's abstract namespace, which the
// net package maps itself. This is the whole of the protocol the node needs:
// one datagram a state change, no library.
func (m *Main) notifyServiceManager(state string) error {
	path := m.Getenv(notifyEnv)
	if path == "" {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify the service manager: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("notify the service manager: %w", err)
	}
	return nil
}
