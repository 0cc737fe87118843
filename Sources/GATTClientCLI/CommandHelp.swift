/// Per-command help with examples (`gattclient COMMAND --help`).
public let commandHelpText: [String: String] = [
    "pair": """
        gattclient pair ADDR [--io-capability keyboard-display|display-yesno|display-only|keyboard-only|none]
                             [--passkey N] [--confirm] [--legacy | --sc-only] [--no-bond] [--force] [--random]
          LE pairing as central, on the user-space host (tcp:, unix:, serial:, hci-user:, sim) and on hciN
          without bluetoothd (the kernel runs SMP, gattclient answers it as bluetoothd's agent would): LE Secure
          Connections when both sides support it (--legacy: LE legacy pairing), the method chosen from both
          IO capabilities (default keyboard-display on a terminal, none otherwise). A passkey we show goes to
          stderr (`passkey 123456`, and an event line under --json); one the device shows comes from
          --passkey, else a prompt on a terminal; a numeric comparison is accepted with --confirm, else
          asked on a terminal, else refused. The bond (keys) is kept under --bonds DIR (default
          $XDG_STATE_HOME/gattclient/bonds), mode 0600; --no-bond keeps nothing. Already bonded: encrypts
          with the stored key (no pairing); --force pairs again. On hciN the kernel chooses the pairing
          (--legacy is refused) and the tool loads the bonds into the kernel at start; where bluetoothd
          runs, its agent pairs (bluetoothctl pair) and keeps the keys.
          examples:
            gattclient --transport sim:thermometer pair C4:7E:11:09:2A:1C/random   # type the passkey the log shows (a terminal)
            gattclient --transport hci-user:0 pair 00:11:22:33:44:55 --passkey 123456   # needs a controller and a device that pairs
            gattclient pair 00:11:22:33:44:55   # needs hci0 without bluetoothd, as root
        """,
    "bonds": """
        gattclient bonds
          The bonds of the adapter's controller address: identity, Secure Connections or legacy,
          authenticated or not, key size, when. --json prints each bond file, keys included. Without
          --transport no controller is needed: every local address's bonds in the store, each named.
          examples:
            gattclient bonds   # no controller needed: every local address's bonds in the default store
            gattclient --transport sim bonds
            gattclient --json --transport hci-user:0 bonds   # needs a controller (the bonds of its address)
        """,
    "unpair": """
        gattclient unpair ADDR
          Forgets the bond with ADDR (its file is removed); the next --security or pair pairs anew.
          ADDR is the identity (a private address its IRK resolves names it too); typed without
          /random it is the bond of that type, else the one device with those bits (two: listed, exit 64).
          Without --transport: from the store alone (every local address; the kernel's keys stay);
          with --transport hciN the kernel's keys go too.
          examples:
            gattclient unpair 00:11:22:33:44:55   # needs a bond with it in the store (no controller needed)
            gattclient --transport sim:thermometer unpair C4:7E:11:09:2A:1C/random   # after pairing with it
        """,
    "shell": """
        gattclient shell [ADDR] [--random]      (or: gattclient -I [ADDR])
          One connection, and commands typed against it: services [--values], read, write, info, pair
          (their options and output, the address left out; --json, -v, --security, --timeout at the end
          of a line apply to it), subscribe HANDLE|UUID [--indicate] and unsubscribe (values printed as
          they come, in the background), mtu, connect [ADDR], disconnect, wait S, help, quit. On a
          terminal: prompt, line editing (arrows, Ctrl-A/E/U/K/W, Alt-B/F), history (↑/↓, kept in
          $XDG_STATE_HOME/gattclient/history); a value that arrives redraws the line being typed. Not a
          terminal: one command per line, no prompt, # comments; exit code 0 or the last failure's.
          examples:
            gattclient --transport sim shell 54:6C:0E:9A:3B:01   # a terminal: type help
            echo 'read 2A19' | gattclient --transport sim shell 54:6C:0E:9A:3B:01
            echo 'info' | gattclient --json --transport sim -I E8:7F:3A:21:9C:05/random
        """,
    "gateway": """
        gattclient gateway --config FILE.json [--duration S]
                           [--mqtt mqtt://HOST[:PORT] [--client-id ID] [--username U --password-file F]
                            [--tls-ca FILE] [--qos 0|1|2] [--queue N] [--home-assistant]
                            [--commands [--command-queue N]]]
          Keeps the configured devices connected (by address, or every device whose advertising matches:
          service, name, manufacturer), writes what each asks after every connection, subscribes, reads
          every N seconds, reconnects with back-off after a loss, and forwards advertisements (every report,
          or those of some names, services or manufacturers). Each message is one JSON line
          {"topic": ..., "payload": {...}}: PREFIX/adv/ADDRESS, PREFIX/dev/ADDRESS/state (waiting,
          connecting, connected, disconnected with its reason, reconnected with the gap, removed) and
          PREFIX/dev/ADDRESS/SERVICE/CHARACTERISTIC (value hex, time, decoded, fields). PREFIX is the
          configuration's, else gattclient/ADAPTER-ADDRESS. With --mqtt the messages go to the broker
          (QoS 1 by default; states retained; PREFIX/status retained online, offline as the last will;
          while the broker is away they wait in a queue of --queue messages, default 100000, the oldest
          advertisements dropped first and any dropped value said); with --commands, PREFIX/dev/ADDRESS/
          SERVICE/CHARACTERISTIC/set (hex) and .../read are commands answered on .../result, only for the
          characteristics a device's "commands" lists in the configuration, never pairing, one at a time
          per device, at most --command-queue pending (default 64; the rest refused). --home-assistant
          publishes Home Assistant discovery for battery levels and the SensorTag's sensors. Ends at
          Ctrl-C or --duration, exit 0. The configuration's members and the topics are in the README.
          examples:
            gattclient --transport sim:counter*4 gateway --config gateway.json --duration 5   # a configuration file
            gattclient --transport sim:counter*4 gateway --config gateway.json --mqtt mqtt://127.0.0.1:1883   # needs a broker there
        """,
    "adapters": """
        gattclient adapters
          Without --transport: the kernel's adapters (hciN, address, up/down, powered, LE on, whether
          bluetoothd manages them, version, manufacturer, bus, name), read without changing anything.
          With --transport hciN: that one. With a controller our host runs (tcp:, unix:, serial:,
          hci-user:, sim): its HCI and LMP versions, manufacturer, LE ACL buffers and LE features.
          examples:
            gattclient --transport sim adapters
            gattclient --json --transport sim adapters
            gattclient adapters   # needs a kernel with Bluetooth
        """,
    "demo": """
        gattclient demo
          The whole job on the built-in simulated devices (no hardware): scan, connect to the CC2650
          SensorTag, discover it, read its device information, print IR temperature and humidity for a
          few seconds, then round-trip text through the Bluefruit LE UART.
        """,
    "scan": """
        gattclient scan [--duration S] [--name TEXT] [--service UUID] [--min-rssi DBM] [--manufacturer ID] [--passive] [--all-reports]
                        [--rssi-changes]
          Advertisers, ADV and SCAN_RSP merged per device (active scan by default: a SensorTag sends its name
          only in its scan response). On a terminal the list updates in place with a ticking countdown, in
          colour (NO_COLOR turns colour off). Otherwise a `NEW` line per device and a `CHG` line when its
          name, services, data or connectability change (--rssi-changes: its RSSI too), each with the
          seconds since the scan began, then `N devices`. --all-reports: one line per report, its AD
          structures decoded below it as dump does. --name matches part of the name, ignoring case;
          --min-rssi keeps devices at least that strong (e.g. -70). --duration defaults to 10 s.
          examples:
            gattclient --transport sim scan --duration 2
            gattclient --json --transport sim scan --duration 2 --name sensortag
            gattclient --transport sim scan --duration 2 --service 6E400001-B5A3-F393-E0A9-E50E24DCCA9E
            gattclient scan --name sensortag   # needs hci0
        """,
    "info": """
        gattclient info ADDR [--random]
          What the device says it is, decoded: GAP name, appearance (the SIG category), preferred
          connection parameters, the Device Information strings, System ID, PnP ID (vendor by name where
          the SIG assigned it), battery level; with the address type and ATT_MTU. One Read Using
          Characteristic UUID each (no discovery); a value the device lacks is left out.
          examples:
            gattclient --transport sim info 54:6C:0E:9A:3B:01
            gattclient --json --transport sim info E8:7F:3A:21:9C:05/random
        """,
    "services": """
        gattclient services ADDR [--values] [--random]
          Discovers every service, included service, characteristic and descriptor (fewest ATT requests), and
          prints a tree with SIG names, properties and handles; --json prints the database with attRequests.
          --values also reads every value with the read property and every descriptor (User Descriptions,
          CCCDs, Presentation Formats), whole, and shows them decoded; a read the device refuses shows its
          ATT error, one refused for security raises it first (bond, else pairing) as read does.
          examples:
            gattclient --transport sim services 54:6C:0E:9A:3B:01
            gattclient --transport sim services --values 54:6C:0E:9A:3B:01
            gattclient --json --transport sim services E8:7F:3A:21:9C:05/random
        """,
    "read": """
        gattclient read ADDR HANDLE|UUID [--long | --no-long] [--random]
        gattclient read ADDR --multiple H,H,...
          By UUID: Read Using Characteristic UUID (no discovery; --long reads every value again in full); by
          handle: Read. A value that fills the response (ATT_MTU - 1 octets) is completed with Read Blob until
          its end; --no-long gives the single response as it came. --multiple: Read Multiple Variable Length,
          every handle back in the order asked (a cut value completed with Read Blob, the handles that did not
          fit asked again); one read per handle when the peer rejects it or answers beyond ATT_MTU.
          examples:
            gattclient --transport sim read 54:6C:0E:9A:3B:01 2A29
            gattclient --transport sim read 54:6C:0E:9A:3B:01 0x0003 --long
            gattclient --json --transport sim read 54:6C:0E:9A:3B:01 --multiple 0x0003,0x001a
        """,
    "write": """
        gattclient write ADDR HANDLE|UUID HEX [--no-response | --long | --reliable] [--random]
        gattclient write ADDR HANDLE|UUID --text STR [...]
          Write Request by default (a value longer than ATT_MTU - 3 octets goes as Prepare/Execute Write, said
          with -v); --no-response: Write Command, unconfirmed ("sent", with a warning when the characteristic's
          properties lack write-without-response); --long: Prepare/Execute Write; --reliable:
          prepared writes checked against their echo. A UUID naming several characteristics is refused with
          their handles.
          examples:
            gattclient --transport sim write 54:6C:0E:9A:3B:01 F000AA02-0451-4000-B000-000000000000 01
            gattclient --transport sim write E8:7F:3A:21:9C:05/random 6E400002-B5A3-F393-E0A9-E50E24DCCA9E --text F --no-response
        """,
    "subscribe": """
        gattclient subscribe ADDR HANDLE|UUID [--indicate] [--count N] [--duration S] [--random]
                             [--write HANDLE|UUID=HEX]...
          Writes each --write value first (a sensor switched on), then the CCCD; says on stderr what it
          subscribed to and waits for; prints every notification (or indication) with a timestamp and
          decoded value; ends with `N notifications in S s` and switches the CCCD off (count, duration,
          Ctrl-C or disconnect). A characteristic that cannot notify is named with its properties.
          examples:
            gattclient --transport sim subscribe 54:6C:0E:9A:3B:01 F000AA01-0451-4000-B000-000000000000 --write F000AA02-0451-4000-B000-000000000000=01 --count 3
            gattclient --json --transport sim subscribe 54:6C:0E:9A:3B:01 0x0025 --write 0x0029=01 --duration 2
        """,
    "uart": """
        gattclient uart ADDR [--random] [--with-response] [--duration S] [--linger S] [--text|--raw] [--eol lf|crlf|cr|none]
        gattclient uart ADDR --send TEXT | --controller button:N | --controller color:R,G,B
          Nordic UART Service (Adafruit Bluefruit LE): stdin goes to RX (split to ATT_MTU - 3, write without
          response unless --with-response) — byte for byte from a pipe or file (--raw), each typed line plus
          --eol (default lf) on a terminal (--text) — and TX notifications go to stdout (text as it comes,
          marked `< ` on a terminal, ending with a newline; anything else as a `hex:` line). At the end of stdin it waits until the
          link has been quiet for --linger seconds (default 1), so the answer to the last line is shown.
          --send and --controller send once and print what comes back for --duration (default 1 s).
          examples:
            gattclient --transport sim uart E8:7F:3A:21:9C:05/random --send hello
            echo hello | gattclient --transport sim uart E8:7F:3A:21:9C:05/random
            gattclient --transport sim uart E8:7F:3A:21:9C:05/random --controller button:1
        """,
    "watch": """
        gattclient watch ADDR --service battery|heart-rate|thermometer|blood-pressure|weight-scale|current-time|
                                        device-information|generic-access [--count N] [--duration S] [--random]
          The typed values of one standard service, through the library's device models: each value read on
          connecting and each one notified or indicated, decoded; the link kept up, reconnecting after every
          loss (re-subscribing, the database cached) until Ctrl-C, --count values or --duration. Each change of
          the link is a line of its own (--json: kind "state"; values are kind "value" with hex and text).
          examples:
            gattclient --transport sim:heartrate watch D1:7E:A8:70:00:01/random --service heart-rate --count 5
            gattclient --transport sim watch 54:6C:0E:9A:3B:01 --service device-information --count 3
        """,
    "sensortag": """
        gattclient sensortag ADDR [--sensors ir,humidity,barometer,optical,movement,keys,battery] [--period MS]
                             [--count N] [--duration S] [--csv FILE] [--random]
          Switches the sensors on (at --period; each has a minimum: ir 300 ms, others 100 ms), subscribes, and
          prints one decoded reading per line with TI's conversions (--json: JSON Lines; --csv: a file for
          plotting); switches them off again on exit, Ctrl-C included.
          examples:
            gattclient --transport sim sensortag 54:6C:0E:9A:3B:01 --sensors ir,humidity --period 500 --count 4
            gattclient --json --transport sim sensortag 54:6C:0E:9A:3B:01 --count 4
        """,
    "peripheral": """
        gattclient peripheral sensortag|bluefruit|--database FILE.json [--mtu N] [--duration S] --transport URI
          Our stack as an advertising GATT server: the emulated CC2650 SensorTag or Bluefruit UART (with their
          firmware behaviour), or a database loaded from JSON (the layout of the shared vectors' databases).
          It advertises again after every disconnect. Lines on stdin drive values, each answered `ok` or
          `error: ...`: notify HANDLE HEX, indicate HANDLE HEX (honouring the client's CCCD), set HANDLE HEX.
          Ends at Ctrl-C, at --duration, or at the end of stdin when no --duration is given.
          Pairing (our own host, not hciN): --io-capability CAP (default none: Just Works), --confirm (a numeric
          comparison accepted unseen: the bond stays unauthenticated), --security-request, --sc-only (no legacy
          pairing), --bondable (keep bonds; off by default) with --max-bonds N (default 32; a new one beyond is
          refused), --passkey N (a fixed passkey to type: refused unless --static-passkey-insecure, since a central
          recovers it one bit per failed attempt). Failed pairings make the next ones wait (Repeated Attempts).
          examples:
            gattclient --transport sim peripheral sensortag --duration 2
            echo "notify 0x0021 5c" | gattclient --transport hci-user:0 peripheral --database db.json --duration 60   # needs a controller and a database file
        """,
    "dump": """
        gattclient dump FILE|- [--summary] [--conn H] [--handle H] [--att-only | --adv-only] [--services FILE.json]
                               [--follow] [--from T] [--to T] [-t | -T] [-w OUT.btsnoop | -w OUT.pcapng | -w -]
          Decodes a capture (btsnoop H4 or Linux monitor, pcap/pcapng H4) at every layer, with GATT context.
          --json: Wireshark's record schema, one record per ATT PDU and advertising report. --summary: counts
          only (with a filter, of what it shows). FILE - reads standard input as it arrives (btmon -w
          /dev/stdout | gattclient dump -); --follow keeps reading a file another program appends to, until Ctrl-C.
          --from/--to T: only the records at or after / at or before T, seconds after the first record
          (0 to 31536000) or an RFC 3339 time (2026-12-03T06:20:00Z). -t: the time of day, -T: the date
          and time (btmon's), instead of seconds since the first record. -w OUT: the records the filters
          match written to OUT instead of printed (with every fragment of their frames): btsnoop, pcapng
          when OUT ends .pcapng, btsnoop on standard output with -w - (gattclient dump CAP --att-only -w - |
          wireshark -k -i -); the count written goes to standard error.
          examples:
            gattclient dump session.btsnoop --att-only   # needs a capture: record one with --record session.btsnoop on any transport
            gattclient --json dump session.btsnoop --handle 0x0025   # needs a capture
            gattclient dump --summary btsnoop_hci.log   # needs a capture (an Android HCI snoop log works)
        """,
    "monitor": """
        gattclient monitor [hciN] [--duration S] [--conn H] [--handle H] [--att-only | --adv-only]
          Every adapter's HCI traffic (bluetoothd's included) from the kernel monitor channel, decoded live;
          --record FILE keeps it. Needs CAP_NET_RAW.
          examples:
            gattclient monitor hci0 --att-only   # needs a kernel with Bluetooth, CAP_NET_RAW
            gattclient --record session.btsnoop monitor --duration 60   # needs a kernel with Bluetooth, CAP_NET_RAW
        """,
]
