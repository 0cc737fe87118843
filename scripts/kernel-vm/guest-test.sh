#!/bin/bash
# The checks of issue 11, run as root inside the qemu guest (scripts/kernel-vm/guest-init.sh
# starts it with a bound). Writes one `PASS|FAIL name: detail` line per check to
# /kvm-out/results.txt and the artefacts next to it. Variables come from /kvm-out/env.sh:
#   KVM_GATTCLIENT  the release gattclient (host path, seen through the overlay root)
#   KVM_PYTHON      a python3 with bumble
#   KVM_SCRIPTS     scripts/kernel-vm
#   KVM_EXAMPLES    the release build of Examples/ (check 10)
#
# Controllers (btvirt -l3 -L: three LE-only VHCI controllers on one virtual air):
#   hci0  our central: kernel path (raw HCI + L2CAP ATT socket), then the HCI user channel
#   hci1  Bumble serving the CC2650-like database (HCI user channel)
#   hci2  our `peripheral` under the kernel (check 5)
set -u
. /kvm-out/env.sh
OUT=/kvm-out
GC=$KVM_GATTCLIENT
RESULTS=$OUT/results.txt
: >"$RESULTS"
PIDS=()

log() { echo "[$(cut -d' ' -f1 /proc/uptime)] $*"; }
result() { # result PASS|FAIL name detail...
    local verdict=$1 name=$2; shift 2
    echo "$verdict $name: $*" >>"$RESULTS"
    log "$verdict $name: $*"
}
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    sleep 0.5
    for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null; done
}
trap cleanup EXIT
# gc NAME ARGS...: runs gattclient with a bound; stdout to $OUT/NAME.out, stderr to NAME.err,
# exit code to $rc.
gc() {
    local name=$1; shift
    log "gattclient $*"
    timeout -k 2 45 "$GC" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
    rc=$?
    log "  -> exit $rc; stderr: $(head -c 400 "$OUT/$name.err" | tr '\n' ' ')"
    return $rc
}
# wait_for SECONDS COMMAND...: polls a cheap condition every 0.2 s, bounded.
wait_for() {
    local limit=$1; shift
    local end=$(( $(date +%s) + limit ))
    until "$@"; do
        [ "$(date +%s)" -ge "$end" ] && return 1
        sleep 0.2
    done
}
is_down() { hciconfig "$1" 2>/dev/null | grep -q DOWN; }
is_up() { hciconfig "$1" 2>/dev/null | grep -q 'UP RUNNING'; }
no_links() { [ -z "$(hcitool -i "$1" con 2>/dev/null | tail -n +2)" ]; }
settings() { timeout 10 btmgmt --index "$1" info 2>/dev/null | grep 'current settings' | head -1; }

# --- kernel modules, AF_ALG, AF_BLUETOOTH --------------------------------------------------
log "modprobe"
modprobe -a bluetooth hci_vhci ecdh_generic algif_skcipher algif_hash ecb cmac \
    || result FAIL setup "modprobe failed"
[ -e /dev/vhci ] || { result FAIL setup "no /dev/vhci after modprobe hci_vhci"; exit 1; }

# --- btmon (live decode and btsnoop), btvirt -------------------------------------------------
stdbuf -oL btmon -w "$OUT/btmon.snoop" >"$OUT/btmon.txt" 2>&1 &
PIDS+=($!)
# A new VHCI controller is powered for setup and auto-powered off about 2 s later; the user
# channel answers EBUSY meanwhile. Under software emulation on a loaded host a controller's setup
# can time out (it then has no address and the management interface does not list it): start
# btvirt again, at most three times.
has_address() { hciconfig "$1" 2>/dev/null | grep -q 'BD Address: [0-9A-F:]*' && ! hciconfig "$1" | grep -q 'BD Address: 00:00:00:00:00:00'; }
for attempt in 1 2 3; do
    btvirt -l3 -L >"$OUT/btvirt.log" 2>&1 &
    BTVIRT_PID=$!
    wait_for 15 test -e /sys/class/bluetooth/hci2 || { result FAIL setup "btvirt created no hci2"; exit 1; }
    wait_for 10 is_down hci0; wait_for 5 is_down hci1; wait_for 5 is_down hci2
    sleep 1
    if has_address hci0 && has_address hci1 && has_address hci2; then
        PIDS+=($BTVIRT_PID)
        break
    fi
    log "controller setup incomplete (attempt $attempt): $(hciconfig | grep -E '^hci|BD Address' | tr -s ' \t\n' ' ')"
    kill $BTVIRT_PID; wait $BTVIRT_PID 2>/dev/null
    wait_for 10 sh -c '! test -e /sys/class/bluetooth/hci0'
    [ $attempt = 3 ] && { result FAIL setup "controller setup incomplete three times"; exit 1; }
done
hciconfig hci1 down
log "controllers: $(hciconfig | grep -E '^hci|BD Address' | tr -s ' \t\n' ' ')"

# --- the peer: Bumble on hci1 through the HCI user channel ------------------------------------
"$KVM_PYTHON" "$KVM_SCRIPTS/hci_socket_peer.py" --index 1 --database "$OUT/peer-database.json" \
    --lifetime 400 --verbose >"$OUT/peer.out" 2>"$OUT/peer.err" &
PEER_PID=$!
PIDS+=($PEER_PID)
if ! wait_for 60 grep -q '^READY' "$OUT/peer.out"; then
    result FAIL setup "Bumble peer on hci1 not ready: $(tail -3 "$OUT/peer.err" | tr '\n' ' ')"
    exit 1
fi
PEER=$(sed -n 's/^READY \([0-9A-F:]*\)\/public.*/\1/p' "$OUT/peer.out")
log "peer $PEER/public (Bumble on hci1)"

# --- check 3b (part 1): hci0 is down and nobody ran btmgmt on it -------------------------------
before=$(hciconfig hci0 | grep -oE 'UP RUNNING|DOWN' | head -1)
before_settings=$(settings 0)

# --- check 4 starts first: the monitor channel watches everything that follows ----------------
timeout -k 2 180 "$GC" monitor --duration 150 >"$OUT/monitor.out" 2>"$OUT/monitor.err" &
MONITOR_PID=$!
PIDS+=($MONITOR_PID)
sleep 2

# --- check 1: scan on the kernel's raw HCI socket ----------------------------------------------
scan_ok=0
for attempt in 1 2 3; do
    gc scan-text --transport hci0 scan --duration 3
    text_rc=$rc
    gc scan-json --transport hci0 --json scan --duration 3
    json_rc=$rc
    if [ $text_rc = 0 ] && [ $json_rc = 0 ] && grep -q "$PEER.*public.*CC2650 SensorTag" "$OUT/scan-text.out" \
        && "$KVM_PYTHON" "$KVM_SCRIPTS/check_json.py" scan "$OUT/scan-json.out" "$PEER" "CC2650 SensorTag" public \
            >"$OUT/scan-check.txt"; then
        scan_ok=1; break
    fi
    # btvirt's controller reports an advertiser once per Scan/Advertise Enable: kick Bumble.
    kill -USR1 $PEER_PID; sleep 1
done
if [ $scan_ok = 1 ]; then
    result PASS 1-kernel-scan "text: $(grep "$PEER" "$OUT/scan-text.out" | grep 'CC2650' | head -1 | tr -s ' '); json: $(cat "$OUT/scan-check.txt") (attempt $attempt)"
else
    result FAIL 1-kernel-scan "exit $text_rc/$json_rc; text: $(head -c 300 "$OUT/scan-text.out"); json check: $(cat "$OUT/scan-check.txt" 2>/dev/null); stderr: $(head -c 300 "$OUT/scan-json.err")"
fi

# --- check 3b (part 2): our management-channel code prepared hci0 ------------------------------
after=$(hciconfig hci0 | grep -oE 'UP RUNNING|DOWN' | head -1)
after_settings=$(settings 0)
if [ "$before" = DOWN ] && [ "$after" = "UP RUNNING" ] && echo "$after_settings" | grep -qw powered \
    && echo "$after_settings" | grep -qw le; then
    result PASS 3b-mgmt-prepare "hci0 before: $before ($before_settings); after our first command: $after ($after_settings)"
else
    result FAIL 3b-mgmt-prepare "hci0 before: $before ($before_settings); after: $after ($after_settings)"
fi

# --- check 2: GATT over the kernel L2CAP ATT socket ---------------------------------------------
c2=()
gc services-hci0 --transport hci0 --json services "$PEER" \
    && "$KVM_PYTHON" "$KVM_SCRIPTS/check_json.py" services "$OUT/services-hci0.out" "$OUT/peer-database.json" >"$OUT/services-hci0.check" \
    && c2+=("services: $(cat "$OUT/services-hci0.check")") || c2+=("FAIL services rc=$rc: $(cat "$OUT/services-hci0.check" 2>/dev/null)")
# Device Name by UUID (Read Using Characteristic UUID) and the Model Number by handle
gc read-name-hci0 --transport hci0 --json read "$PEER" 2A00 \
    && "$KVM_PYTHON" "$KVM_SCRIPTS/check_json.py" value "$OUT/read-name-hci0.out" "$(printf 'CC2650 SensorTag' | od -An -tx1 | tr -d ' \n')" >/dev/null \
    && c2+=("read 2A00 'CC2650 SensorTag'") || c2+=("FAIL read 2A00 rc=$rc $(head -c 200 "$OUT/read-name-hci0.out")")
# IR Temperature Config (F000AA02): write 01, read it back
CONF_HANDLE=$("$KVM_PYTHON" -c "
import json,sys
for s in json.load(open('$OUT/peer-database.json'))['services']:
    for c in s['characteristics']:
        if c['uuid'].startswith('F000AA02'): print(c['valueHandle'])" 2>/dev/null)
BATTERY_HANDLE=$("$KVM_PYTHON" -c "
import json,sys
for s in json.load(open('$OUT/peer-database.json'))['services']:
    for c in s['characteristics']:
        if c['uuid'].startswith('00002A19'): print(c['valueHandle'])" 2>/dev/null)
gc write-hci0 --transport hci0 write "$PEER" "$CONF_HANDLE" 01 \
    && gc read-conf-hci0 --transport hci0 --json --record "$OUT/read-hci0.btsnoop" read "$PEER" "$CONF_HANDLE" \
    && "$KVM_PYTHON" "$KVM_SCRIPTS/check_json.py" value "$OUT/read-conf-hci0.out" 01 >/dev/null \
    && c2+=("write $CONF_HANDLE=01 and read back") || c2+=("FAIL write/read-back rc=$rc $(head -c 200 "$OUT/read-conf-hci0.out")")
gc subscribe-hci0 --transport hci0 --json subscribe "$PEER" "$BATTERY_HANDLE" --count 3 \
    && "$KVM_PYTHON" "$KVM_SCRIPTS/check_json.py" notifications "$OUT/subscribe-hci0.out" "$BATTERY_HANDLE" 3 >"$OUT/subscribe-hci0.check" \
    && c2+=("subscribe: $(cat "$OUT/subscribe-hci0.check")") || c2+=("FAIL subscribe rc=$rc $(cat "$OUT/subscribe-hci0.check" 2>/dev/null)")
# --record: our btsnoop, read back by our dump and by tshark
if [ -s "$OUT/read-hci0.btsnoop" ]; then
    gc dump-hci0 dump "$OUT/read-hci0.btsnoop"
    dump_att=$(grep -c 'ATT' "$OUT/dump-hci0.out")
    tshark_att=$(timeout 60 tshark -r "$OUT/read-hci0.btsnoop" -Y btatt 2>"$OUT/tshark.err" | tee "$OUT/tshark-hci0.txt" | wc -l)
    if [ "$dump_att" -gt 0 ] && [ "$tshark_att" -gt 0 ]; then
        c2+=("--record: dump $dump_att ATT lines, tshark $tshark_att btatt packets")
    else
        c2+=("FAIL --record: dump $dump_att ATT lines, tshark $tshark_att btatt packets ($(head -c 200 "$OUT/tshark.err"))")
    fi
else
    c2+=("FAIL --record wrote nothing")
fi
if printf '%s\n' "${c2[@]}" | grep -q '^FAIL'; then
    result FAIL 2-kernel-gatt "$(printf '%s; ' "${c2[@]}")"
else
    result PASS 2-kernel-gatt "$(printf '%s; ' "${c2[@]}")"
fi

# --- check 7: --security medium sets BT_SECURITY on the ATT socket ------------------------------
# Wait for the kernel to drop the idle link so that the next connect starts a fresh link at the
# requested level: the kernel then starts SMP pairing as soon as the link is up. What asks user
# space (bluetoothd's agent, elsewhere) is answered by gattclient's own agent on the management
# channel, which also keeps the keys in --bonds.
wait_for 10 no_links hci0
mark=$(( $(wc -l <"$OUT/btmon.txt") + 1 ))
gc read-secure-hci0 --transport hci0 --bonds "$OUT/bonds7" --security medium --json read "$PEER" 2A00
secure_rc=$rc
sleep 1
tail -n +"$mark" "$OUT/btmon.txt" >"$OUT/btmon-security.txt"
smp_before=$(head -n $(( mark - 1 )) "$OUT/btmon.txt" | grep -c 'SMP: ')
smp_request=$(grep -A1 '\[hci0\]' "$OUT/btmon-security.txt" | grep -c 'SMP: Pairing Request')
smp=$(grep -cE 'SMP: Pairing (Request|Response|Confirm|Random)' "$OUT/btmon-security.txt")
encrypted=$(grep -A3 'Encryption Change' "$OUT/btmon-security.txt" | grep -c 'Encryption: Enabled')
# Where our client's first ATT PDU and the first Encryption Change sit in the trace (reported,
# not judged: the kernel decides when the socket becomes writable).
first_att=$(grep -n 'ATT: ' "$OUT/btmon-security.txt" | head -1 | cut -d: -f1)
first_enc=$(grep -n 'Encryption Change' "$OUT/btmon-security.txt" | head -1 | cut -d: -f1)
order="no ATT PDU seen"
if [ -n "$first_att" ] && [ -n "$first_enc" ]; then
    [ "$first_enc" -lt "$first_att" ] && order="link encrypted before the first ATT PDU" \
        || order="note: the first ATT PDUs went out before the Encryption Change"
elif [ -n "$first_att" ]; then
    order="ATT PDUs on an unencrypted link"
fi
# For comparison (reported, not judged): BlueZ's gatttool asks for the same level the same way
# (BT_SECURITY before connect); where do its ATT PDUs go?
wait_for 10 no_links hci0
"$KVM_PYTHON" "$KVM_SCRIPTS/mgmt_confirm.py" --lifetime 30 >"$OUT/mgmt-confirm-gatttool.out" 2>&1 &
PIDS+=($!)
wait_for 5 grep -q listening "$OUT/mgmt-confirm-gatttool.out"
mark2=$(( $(wc -l <"$OUT/btmon.txt") + 1 ))
timeout 30 gatttool -i hci0 -b "$PEER" -t public --sec-level=medium --char-read --uuid=2a00 >"$OUT/gatttool-secure.txt" 2>&1
sleep 1
tail -n +"$mark2" "$OUT/btmon.txt" >"$OUT/btmon-security-gatttool.txt"
g_att=$(grep -n 'ATT: ' "$OUT/btmon-security-gatttool.txt" | head -1 | cut -d: -f1)
g_enc=$(grep -n 'Encryption Change' "$OUT/btmon-security-gatttool.txt" | head -1 | cut -d: -f1)
g_order="gatttool --sec-level=medium: $(head -1 "$OUT/gatttool-secure.txt" | tr -s ' \t' ' ' | cut -c1-60)"
if [ -n "$g_att" ] && [ -n "$g_enc" ]; then
    [ "$g_enc" -lt "$g_att" ] && g_order="$g_order; its first ATT PDU after the Encryption Change" \
        || g_order="$g_order; its first ATT PDU before the Encryption Change too"
fi
bond7=$(ls "$OUT"/bonds7/*/"$PEER".json 2>/dev/null | head -1)
detail="exit $secure_rc; hci0 sent $smp_request SMP Pairing Request(s) right after link-up ($smp pairing PDUs in all; $smp_before SMP PDUs in the whole trace before, without --security); $encrypted 'Encryption: Enabled' events; $order; our agent kept the bond: ${bond7:-none}; for comparison, $g_order"
if [ $secure_rc = 0 ] && [ "$smp_request" -gt 0 ] && [ "$smp_before" = 0 ] && [ "$encrypted" -gt 0 ] && [ -n "$bond7" ]; then
    result PASS 7-security "$detail"
else
    result FAIL 7-security "$detail; stderr: $(head -c 300 "$OUT/read-secure-hci0.err")"
fi

# --- check 11: pairing on hci0 without bluetoothd, keys in the bond store and back -------------
# gattclient is the kernel's pairing agent and key store here (issue 18). Steps, each on a fresh
# link: (a) unpair check 7's bond: the file and the kernel's keys go; (b) read a value that needs
# encryption with no --security: Insufficient Encryption → BT_SECURITY → the kernel pairs, our
# agent answers, the keys land in --bonds and equal Bumble's; (c) `bonds --json` lists them;
# (d) `pair` finds the bond and encrypts with it (no SMP); (e) the kernel forgets every key (as
# after a reboot), and the read works again without pairing: gattclient loaded the store into
# the kernel when it started; (f) `pair --force` pairs anew through Pair Device.
SECURE_UUID=0000FEE1-0000-1000-8000-00805F9B34FB
c11=(); f11=0
# The LTK Bumble stored last: Secure Connections' `ltk=`, else the legacy key the central uses.
bumble_ltk() {
    local line; line=$(grep '^PAIRING done' "$OUT/peer.out" | tail -1)
    echo "$line" | grep -q ' ltk=' && echo "$line" | sed -n 's/.* ltk=\([0-9a-f]*\).*/\1/p' \
        || echo "$line" | sed -n 's/.*ltk_central=\([0-9a-f]*\).*/\1/p'
}
smp_pairing_in() { grep -cE 'SMP: Pairing (Request|Response)' "$1"; }
btmon_since() { tail -n +"$1" "$OUT/btmon.txt" >"$2"; }
fail11() { c11+=("FAIL $*"); f11=1; }
wait_for 10 no_links hci0
if gc unpair-hci0 --transport hci0 --bonds "$OUT/bonds7" unpair "$PEER" && ! ls "$OUT"/bonds7/*/"$PEER".json >/dev/null 2>&1; then
    c11+=("a: $(cat "$OUT/unpair-hci0.out")")
else
    fail11 "a: unpair rc=$rc $(head -c 200 "$OUT/unpair-hci0.err")"
fi
wait_for 10 no_links hci0
m=$(( $(wc -l <"$OUT/btmon.txt") + 1 ))
gc read-auto-hci0 --transport hci0 --bonds "$OUT/bonds" --json read "$PEER" "$SECURE_UUID"; auto_rc=$rc
sleep 1
btmon_since $m "$OUT/btmon-11b.txt"
bond11=$(ls "$OUT"/bonds/*/"$PEER".json 2>/dev/null | head -1)
ours=$([ -n "$bond11" ] && "$KVM_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["peerLTK"]["ltk"].lower())' "$bond11" 2>/dev/null)
theirs=$(bumble_ltk)
if [ $auto_rc = 0 ] && "$KVM_PYTHON" "$KVM_SCRIPTS/check_json.py" value "$OUT/read-auto-hci0.out" "$(printf 'heart rate 72' | od -An -tx1 | tr -d ' \n')" >/dev/null \
    && [ "$(smp_pairing_in "$OUT/btmon-11b.txt")" -gt 0 ] && [ -n "$ours" ] && [ "$ours" = "$theirs" ]; then
    c11+=("b: read after the kernel paired ($(smp_pairing_in "$OUT/btmon-11b.txt") SMP Pairing Request/Response), bond $(basename "$bond11"), LTK equals Bumble's")
else
    fail11 "b: rc=$auto_rc value=$(head -c 200 "$OUT/read-auto-hci0.out") smp=$(smp_pairing_in "$OUT/btmon-11b.txt") bond=${bond11:-none} ours=$ours theirs=$theirs; $(head -c 300 "$OUT/read-auto-hci0.err")"
fi
if gc bonds-hci0 --transport hci0 --bonds "$OUT/bonds" --json bonds && grep -q "\"identity\":\"$PEER\"" "$OUT/bonds-hci0.out"; then
    c11+=("c: bonds --json lists $PEER")
else
    fail11 "c: bonds rc=$rc $(head -c 200 "$OUT/bonds-hci0.out")"
fi
wait_for 10 no_links hci0
m=$(( $(wc -l <"$OUT/btmon.txt") + 1 ))
gc pair-bonded-hci0 --transport hci0 --bonds "$OUT/bonds" pair "$PEER"; prc=$rc
sleep 1
btmon_since $m "$OUT/btmon-11d.txt"
if [ $prc = 0 ] && grep -q 'already bonded' "$OUT/pair-bonded-hci0.out" && [ "$(smp_pairing_in "$OUT/btmon-11d.txt")" = 0 ] \
    && grep -A3 'Encryption Change' "$OUT/btmon-11d.txt" | grep -q 'Encryption: Enabled'; then
    c11+=("d: $(cat "$OUT/pair-bonded-hci0.out" | cut -c1-80)…")
else
    fail11 "d: rc=$prc $(head -c 200 "$OUT/pair-bonded-hci0.out") smp=$(smp_pairing_in "$OUT/btmon-11d.txt"); $(head -c 200 "$OUT/pair-bonded-hci0.err")"
fi
wait_for 10 no_links hci0
"$KVM_PYTHON" "$KVM_SCRIPTS/mgmt_clear_keys.py" 0 >"$OUT/clear-keys.out" 2>&1; clear_rc=$?
m=$(( $(wc -l <"$OUT/btmon.txt") + 1 ))
gc read-reloaded-hci0 --transport hci0 --bonds "$OUT/bonds" --json read "$PEER" "$SECURE_UUID"; rrc=$rc
sleep 1
btmon_since $m "$OUT/btmon-11e.txt"
if [ $clear_rc = 0 ] && [ $rrc = 0 ] && [ "$(smp_pairing_in "$OUT/btmon-11e.txt")" = 0 ] \
    && grep -A3 'Encryption Change' "$OUT/btmon-11e.txt" | grep -q 'Encryption: Enabled' \
    && "$KVM_PYTHON" "$KVM_SCRIPTS/check_json.py" value "$OUT/read-reloaded-hci0.out" "$(printf 'heart rate 72' | od -An -tx1 | tr -d ' \n')" >/dev/null; then
    c11+=("e: kernel keys cleared ($(tr '\n' ' ' <"$OUT/clear-keys.out" | cut -c1-60)…), read encrypted with the reloaded key, no SMP")
else
    fail11 "e: clear=$clear_rc rc=$rrc smp=$(smp_pairing_in "$OUT/btmon-11e.txt") $(head -c 200 "$OUT/read-reloaded-hci0.out"); $(head -c 200 "$OUT/read-reloaded-hci0.err")"
fi
wait_for 10 no_links hci0
m=$(( $(wc -l <"$OUT/btmon.txt") + 1 ))
gc pair-force-hci0 --transport hci0 --bonds "$OUT/bonds" pair "$PEER" --force; frc=$rc
sleep 1
btmon_since $m "$OUT/btmon-11f.txt"
ours=$([ -n "$bond11" ] && "$KVM_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["peerLTK"]["ltk"].lower())' "$bond11" 2>/dev/null)
theirs=$(bumble_ltk)
if [ $frc = 0 ] && grep -q '^paired with' "$OUT/pair-force-hci0.out" && [ "$(smp_pairing_in "$OUT/btmon-11f.txt")" -gt 0 ] \
    && [ -n "$ours" ] && [ "$ours" = "$theirs" ]; then
    c11+=("f: $(cat "$OUT/pair-force-hci0.out"), new LTK equals Bumble's")
else
    fail11 "f: rc=$frc $(head -c 200 "$OUT/pair-force-hci0.out") smp=$(smp_pairing_in "$OUT/btmon-11f.txt") ours=$ours theirs=$theirs; $(head -c 300 "$OUT/pair-force-hci0.err")"
fi
if [ $f11 = 0 ]; then
    result PASS 11-kernel-pairing "$(printf '%s; ' "${c11[@]}")"
else
    result FAIL 11-kernel-pairing "$(printf '%s; ' "${c11[@]}")"
fi

# --- check 4: the monitor channel showed the ATT traffic of check 2 -----------------------------
kill -INT $MONITOR_PID 2>/dev/null
wait_for 5 sh -c "! kill -0 $MONITOR_PID 2>/dev/null"
monitor_att=$(grep -c 'ATT' "$OUT/monitor.out")
monitor_read=$(grep -E 'ATT' "$OUT/monitor.out" | grep -ciE 'read')
monitor_notify=$(grep -E 'ATT' "$OUT/monitor.out" | grep -ciE 'notif')
if [ "$monitor_att" -gt 0 ] && [ "$monitor_read" -gt 0 ] && [ "$monitor_notify" -gt 0 ]; then
    result PASS 4-monitor "$monitor_att ATT lines ($monitor_read reads, $monitor_notify notifications), e.g. $(grep 'ATT' "$OUT/monitor.out" | grep -i 'read' | head -1 | tr -s ' ')"
else
    result FAIL 4-monitor "$monitor_att ATT lines ($monitor_read reads, $monitor_notify notifications); stderr: $(head -c 300 "$OUT/monitor.err")"
fi

# --- check 3: the whole user-space host on the HCI user channel of hci0 -------------------------
c3=()
# hci0 is up under the kernel: the tool must say so clearly.
gc user-busy --transport hci-user:0 scan --duration 2
busy_rc=$rc
if [ $busy_rc != 0 ] && grep -qiE 'down|busy|in use' "$OUT/user-busy.err"; then
    c3+=("adapter up: exit $busy_rc, '$(head -1 "$OUT/user-busy.err")'")
else
    c3+=("FAIL adapter up: exit $busy_rc, '$(head -1 "$OUT/user-busy.err")'")
fi
# The kernel's links must be gone first: a controller going down does not tell btvirt's peer,
# which would stay "connected" and stop advertising.
wait_for 10 no_links hci0 || for handle in $(hcitool -i hci0 con | sed -n 's/.*handle \([0-9]*\).*/\1/p'); do
    hcitool -i hci0 ledc "$handle"; done
wait_for 10 no_links hci0 || log "hci0 still has links: $(hcitool -i hci0 con | tail -n +2)"
hciconfig hci0 down
wait_for 5 is_down hci0
gc user-scan --transport hci-user:0 --json scan --duration 3 \
    && "$KVM_PYTHON" "$KVM_SCRIPTS/check_json.py" scan "$OUT/user-scan.out" "$PEER" "CC2650 SensorTag" public >"$OUT/user-scan.check" \
    || { kill -USR1 $PEER_PID; sleep 1; gc user-scan --transport hci-user:0 --json scan --duration 3 \
        && "$KVM_PYTHON" "$KVM_SCRIPTS/check_json.py" scan "$OUT/user-scan.out" "$PEER" "CC2650 SensorTag" public >"$OUT/user-scan.check"; } \
    && c3+=("scan: $(cat "$OUT/user-scan.check")") || c3+=("FAIL scan rc=$rc $(cat "$OUT/user-scan.check" 2>/dev/null)")
gc services-user --transport hci-user:0 --json services "$PEER" \
    && "$KVM_PYTHON" "$KVM_SCRIPTS/check_json.py" services "$OUT/services-user.out" "$OUT/peer-database.json" >"$OUT/services-user.check" \
    && c3+=("services: $(cat "$OUT/services-user.check")") || c3+=("FAIL services rc=$rc $(cat "$OUT/services-user.check" 2>/dev/null)")
gc write-user --transport hci-user:0 write "$PEER" "$CONF_HANDLE" 00 \
    && gc read-user --transport hci-user:0 --json --record "$OUT/read-user.btsnoop" read "$PEER" "$CONF_HANDLE" \
    && "$KVM_PYTHON" "$KVM_SCRIPTS/check_json.py" value "$OUT/read-user.out" 00 >/dev/null \
    && c3+=("write $CONF_HANDLE=00 and read back") || c3+=("FAIL write/read-back rc=$rc $(head -c 200 "$OUT/read-user.out")")
gc subscribe-user --transport hci-user:0 --json subscribe "$PEER" "$BATTERY_HANDLE" --count 3 \
    && "$KVM_PYTHON" "$KVM_SCRIPTS/check_json.py" notifications "$OUT/subscribe-user.out" "$BATTERY_HANDLE" 3 >"$OUT/subscribe-user.check" \
    && c3+=("subscribe: $(cat "$OUT/subscribe-user.check")") || c3+=("FAIL subscribe rc=$rc $(cat "$OUT/subscribe-user.check" 2>/dev/null)")
if [ -s "$OUT/read-user.btsnoop" ]; then
    gc dump-user dump "$OUT/read-user.btsnoop"
    tshark_user=$(timeout 60 tshark -r "$OUT/read-user.btsnoop" -Y btatt 2>/dev/null | wc -l)
    [ "$(grep -c ATT "$OUT/dump-user.out")" -gt 0 ] && [ "$tshark_user" -gt 0 ] \
        && c3+=("--record: dump and tshark ($tshark_user btatt) read it") || c3+=("FAIL --record capture unreadable")
fi
if printf '%s\n' "${c3[@]}" | grep -q '^FAIL'; then
    result FAIL 3-user-channel "$(printf '%s; ' "${c3[@]}")"
else
    result PASS 3-user-channel "$(printf '%s; ' "${c3[@]}")"
fi

# --- check 6: no privilege, no capabilities: a clear permission error, exit 77 ------------------
timeout 10 btmgmt --index 0 power on >/dev/null 2>&1
wait_for 5 is_up hci0
# transport|command|the capability the message must name
for case in "hci0|scan --duration 2|CAP_NET_RAW" "hci0|monitor --duration 2|CAP_NET_RAW" \
    "hci-user:0|scan --duration 2|CAP_NET_ADMIN"; do
    IFS='|' read -r transport command capability <<<"$case"
    name=nonroot-${transport%%:*}-${command%% *}
    log "as nobody without capabilities: gattclient --transport $transport $command"
    timeout -k 2 20 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all \
        -- "$GC" --transport "$transport" $command >"$OUT/$name.out" 2>"$OUT/$name.err"
    nr_rc=$?
    if [ $nr_rc = 77 ] && grep -q "$capability" "$OUT/$name.err"; then
        result PASS "6-no-privilege-${transport%%:*}-${command%% *}" "exit 77: $(head -1 "$OUT/$name.err")"
    else
        result FAIL "6-no-privilege-${transport%%:*}-${command%% *}" "exit $nr_rc (want 77 naming $capability): $(head -c 300 "$OUT/$name.err")"
    fi
done

# --- check 9: another ATT client holds the device (bluetoothd's role; here BlueZ's gatttool) -----
# bluetoothd connects to known devices by itself and keeps their ATT channel open. The kernel
# allows one ATT channel per link, so our connect is refused: the tool must say who holds the
# device and what to run, and leave the other client's connection alone. It runs before
# check 8, which powers hci0 off and on.
timeout 10 btmgmt --index 0 power on >/dev/null 2>&1
wait_for 5 is_up hci0
wait_for 10 no_links hci0
# The fifo lives in the guest's own /tmp: the 9p share of $OUT cannot hold one.
HOLDER_FIFO=/tmp/holder.fifo
rm -f "$HOLDER_FIFO"
mkfifo "$HOLDER_FIFO"
timeout -k 2 60 stdbuf -oL -eL gatttool -i hci0 -b "$PEER" -t public -I <"$HOLDER_FIFO" >"$OUT/holder.txt" 2>&1 &
HOLDER_PID=$!
PIDS+=($HOLDER_PID)
exec 7>"$HOLDER_FIFO"
echo connect >&7
if wait_for 20 grep -q 'Connection successful' "$OUT/holder.txt"; then
    links_before=$(hcitool -i hci0 con | tail -n +2 | wc -l)
    gc held-read --transport hci0 --json read "$PEER" 2a00
    held_rc=$rc
    # the holder still has its link and can still read
    echo "char-read-uuid 2a00" >&7
    sleep 2
    links_after=$(hcitool -i hci0 con | tail -n +2 | wc -l)
    if [ $held_rc = 69 ] && grep -q "is connected with an ATT channel of another client" "$OUT/held-read.err" \
        && grep -q "bluetoothctl disconnect $PEER" "$OUT/held-read.err" \
        && [ "$links_before" = 1 ] && [ "$links_after" = 1 ] && grep -qi 'value: 43 43 32 36' "$OUT/holder.txt"; then
        result PASS 9-device-held "gatttool holds $PEER: exit 69: $(head -1 "$OUT/held-read.err"); gatttool's link stays (1 link before and after) and it still reads"
    else
        result FAIL 9-device-held "exit $held_rc, links $links_before/$links_after: stdout $(head -c 200 "$OUT/held-read.out"); stderr $(head -c 300 "$OUT/held-read.err"); holder: $(tail -3 "$OUT/holder.txt" | tr '\n' ' ')"
    fi
else
    result FAIL 9-device-held "gatttool did not connect to $PEER: $(tr '\n' ' ' <"$OUT/holder.txt" | head -c 300)"
fi
echo disconnect >&7
echo quit >&7
exec 7>&-
wait_for 10 sh -c "! kill -0 $HOLDER_PID 2>/dev/null"
wait_for 10 no_links hci0

# --- check 8: an adapter powered off or with LE switched off (issue 6) ----------------------------
# A user with CAP_NET_RAW (enough for the raw socket) but not CAP_NET_ADMIN cannot change the
# adapter's settings: the tool must say what is off and what to run, exit 69. As root it fixes
# them itself. LE can only be switched off on a dual-mode controller: a second btvirt makes one.
# as uid nobody with CAP_NET_RAW only (what `setcap cap_net_raw+eip` gives), bounded
AS_RAW_USER=(timeout -k 2 20 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all,+net_raw
    --ambient-caps=-all,+net_raw --bounding-set=-all,+net_raw --)
c8=()
wait_for 20 no_links hci0
timeout 10 btmgmt --index 0 power off >/dev/null 2>&1
wait_for 5 is_down hci0
"${AS_RAW_USER[@]}" "$GC" --transport hci0 scan --duration 1 >"$OUT/off-scan.out" 2>"$OUT/off-scan.err"
off_rc=$?
if [ $off_rc = 69 ] && grep -q 'hci0 is powered off' "$OUT/off-scan.err" && grep -q 'btmgmt --index 0 power on' "$OUT/off-scan.err"; then
    c8+=("powered off, CAP_NET_RAW only: exit 69: $(head -1 "$OUT/off-scan.err")")
else
    c8+=("FAIL powered off: exit $off_rc (want 69 naming btmgmt --index 0 power on): $(head -c 300 "$OUT/off-scan.err")")
fi
for attempt in 1 2 3; do
    btvirt -l1 >"$OUT/btvirt-dual.log" 2>&1 &
    DUAL_PID=$!
    wait_for 15 test -e /sys/class/bluetooth/hci3 && wait_for 10 is_down hci3 && sleep 1
    if has_address hci3; then PIDS+=($DUAL_PID); break; fi
    log "dual-mode controller setup incomplete (attempt $attempt)"
    kill $DUAL_PID; wait $DUAL_PID 2>/dev/null
    wait_for 10 sh -c '! test -e /sys/class/bluetooth/hci3'
done
if has_address hci3; then
    timeout 10 btmgmt --index 3 le off >"$OUT/le-off.txt" 2>&1
    timeout 10 btmgmt --index 3 power on >>"$OUT/le-off.txt" 2>&1
    wait_for 5 is_up hci3
    before_le=$(settings 3)
    "${AS_RAW_USER[@]}" "$GC" --transport hci3 scan --duration 1 >"$OUT/le-off-scan.out" 2>"$OUT/le-off-scan.err"
    le_rc=$?
    if echo "$before_le" | grep -qw le; then
        c8+=("FAIL btmgmt did not switch LE off on hci3: $before_le")
    elif [ $le_rc = 69 ] && grep -q 'hci3 has LE switched off' "$OUT/le-off-scan.err" \
        && grep -q 'btmgmt --index 3 le on' "$OUT/le-off-scan.err"; then
        c8+=("LE off on a dual-mode hci3, CAP_NET_RAW only: exit 69: $(head -1 "$OUT/le-off-scan.err")")
    else
        c8+=("FAIL LE off: exit $le_rc (want 69 naming btmgmt --index 3 le on): $(head -c 300 "$OUT/le-off-scan.err")")
    fi
    gc le-off-root --transport hci3 scan --duration 1
    after_le=$(settings 3)
    if [ $rc = 0 ] && echo "$after_le" | grep -qw le; then
        c8+=("as root gattclient switched LE on itself (exit 0; $after_le)")
    else
        c8+=("FAIL as root: exit $rc, settings after: $after_le; $(head -c 200 "$OUT/le-off-root.err")")
    fi
else
    c8+=("FAIL a second btvirt made no hci3: $(head -c 200 "$OUT/btvirt-dual.log")")
fi
# Check 5 needs hci0 powered again.
timeout 10 btmgmt --index 0 power on >/dev/null 2>&1
wait_for 5 is_up hci0
if printf '%s\n' "${c8[@]}" | grep -q '^FAIL'; then
    result FAIL 8-adapter-not-ready "$(printf '%s; ' "${c8[@]}")"
else
    result PASS 8-adapter-not-ready "$(printf '%s; ' "${c8[@]}")"
fi

# --- check 5: our peripheral on hci2, read by BlueZ's gatttool on hci0 --------------------------
if "$GC" --help 2>&1 | grep -q '^  peripheral'; then
    # One link per central at a time (btvirt mixes up connection handles otherwise).
    wait_for 10 no_links hci0
    P2=$(hciconfig hci2 | sed -n 's/.*BD Address: \([0-9A-F:]*\).*/\1/p')
    timeout -k 2 90 "$GC" --transport hci2 peripheral sensortag --duration 60 </dev/null \
        >"$OUT/peripheral.out" 2>"$OUT/peripheral.err" &
    PERIPHERAL_PID=$!
    PIDS+=($PERIPHERAL_PID)
    wait_for 15 is_up hci2
    sleep 2
    c5=()
    primary=$(timeout 30 gatttool -i hci0 -b "$P2" -t public --primary 2>&1 | tee "$OUT/gatttool-primary.txt")
    echo "$primary" | grep -qi 'uuid: f000aa00-0451-4000-b000-000000000000' \
        && c5+=("gatttool --primary: $(echo "$primary" | grep -c 'uuid:') services, SensorTag's F000AA00 among them") \
        || c5+=("FAIL gatttool --primary: $(echo "$primary" | head -3 | tr '\n' ' ')")
    characteristics=$(timeout 30 gatttool -i hci0 -b "$P2" -t public --characteristics 2>&1 | tee "$OUT/gatttool-characteristics.txt")
    [ "$(echo "$characteristics" | grep -c 'char value handle')" -gt 10 ] \
        && c5+=("--characteristics: $(echo "$characteristics" | grep -c 'char value handle')") \
        || c5+=("FAIL gatttool --characteristics: $(echo "$characteristics" | head -2 | tr '\n' ' ')")
    name=$(timeout 30 gatttool -i hci0 -b "$P2" -t public --char-read --uuid=2a00 2>&1 | tee "$OUT/gatttool-read.txt")
    # "CC2650 SensorTag" in gatttool's hex
    echo "$name" | grep -q 'value: 43 43 32 36 35 30 20 53 65 6e 73 6f 72 54 61 67' \
        && c5+=("--char-read --uuid=2a00: 'CC2650 SensorTag' ($(echo "$name" | head -1 | tr -s ' \t' ' '))") \
        || c5+=("FAIL gatttool --char-read --uuid=2a00: $(echo "$name" | head -2 | tr '\n' ' ')")
    kill -INT $PERIPHERAL_PID 2>/dev/null
    wait_for 5 sh -c "! kill -0 $PERIPHERAL_PID 2>/dev/null"
    if printf '%s\n' "${c5[@]}" | grep -q '^FAIL'; then
        result FAIL 5-peripheral "$P2 on hci2: $(printf '%s; ' "${c5[@]}") stderr: $(head -c 300 "$OUT/peripheral.err")"
    else
        result PASS 5-peripheral "$P2 on hci2: $(printf '%s; ' "${c5[@]}")"
    fi
else
    result PENDING 5-peripheral "this gattclient has no peripheral command (branch peripheral not merged)"
fi

# --- check 10: the library's front door on the kernel path (issue 16) ----------------------------
# Examples/central-peripheral, built as a user's package: advertises a Battery and an LED service
# on hci2 (management channel), scans for it on hci0 (raw HCI socket), connects (L2CAP ATT
# socket), reads, writes and receives a notification.
if [ -n "${KVM_EXAMPLES:-}" ] && [ -x "$KVM_EXAMPLES/central-peripheral" ]; then
    wait_for 10 no_links hci0
    wait_for 10 no_links hci2
    timeout -k 2 90 "$KVM_EXAMPLES/central-peripheral" hci2 hci0 >"$OUT/example.out" 2>"$OUT/example.err"
    rc=$?
    if [ $rc = 0 ] && grep -q 'central: notified battery \[86\]' "$OUT/example.out" \
        && grep -q 'set the LED to \[1\]' "$OUT/example.out"; then
        result PASS 10-facade-example "central-peripheral hci2 hci0: $(tr '\n' ';' <"$OUT/example.out" | head -c 400)"
    else
        result FAIL 10-facade-example "exit $rc: $(tr '\n' ';' <"$OUT/example.out" | head -c 300) stderr: $(head -c 300 "$OUT/example.err")"
    fi
else
    result FAIL 10-facade-example "no Examples build (KVM_EXAMPLES=${KVM_EXAMPLES:-unset})"
fi

# --- check 12: `gattclient adapters`, the kernel rows (issue 20) ---------------------------------
# What HCIGETDEVINFO and the management channel say of each adapter, against hciconfig and btmgmt.
: >"$OUT/adapters.expected"
# Every adapter the kernel has now (check 8 adds a dual-mode one), in index order.
for n in $(ls /sys/class/bluetooth | sed -n 's/^hci\([0-9][0-9]*\)$/\1/p' | sort -n); do
    address=$(hciconfig "hci$n" 2>/dev/null | awk '/BD Address/ {print $3}')
    state=down; is_up "hci$n" && state=up
    current=$(settings "$n")
    if [ -n "$current" ]; then
        powered=0; echo "$current" | grep -qw powered && powered=1
        le=0; echo "$current" | grep -qw le && le=1
    else
        powered=-; le=-
    fi
    echo "$n $address $state $powered $le" >>"$OUT/adapters.expected"
done
HCI0_ADDRESS=$(awk '$1 == 0 {print $2}' "$OUT/adapters.expected")
if gc adapters-json --json adapters \
    && "$KVM_PYTHON" "$KVM_SCRIPTS/check_json.py" adapters "$OUT/adapters-json.out" "$OUT/adapters.expected" >"$OUT/adapters.check" \
    && gc adapters-hci0 --transport hci0 adapters && grep -q "^hci0  $HCI0_ADDRESS  " "$OUT/adapters-hci0.out" \
    && grep -q "no bluetoothd" "$OUT/adapters-hci0.out" && [ "$(wc -l <"$OUT/adapters-hci0.out")" = 1 ]; then
    result PASS 12-adapters "$(cat "$OUT/adapters.check" | head -c 300); hci0 alone: $(head -c 200 "$OUT/adapters-hci0.out")"
else
    result FAIL 12-adapters "exit $rc: $(cat "$OUT/adapters.check" 2>/dev/null | head -c 300) $(head -c 300 "$OUT"/adapters-*.out) expected $(tr '\n' ';' <"$OUT/adapters.expected")"
fi

# --- check 13: link control and EATT on the kernel path are refused, never dropped (issue 24) --
# The kernel owns the link on hciN: --phy (and the other link options) and --eatt end with exit 64
# and say why, before any connection is tried.
link_rc=-1; eatt_rc=-1
gc link-hci0 --transport hci0 info 00:11:22:33:44:55/public --phy 2m --interval 15; link_rc=$rc
gc eatt-hci0 --transport hci0 read 00:11:22:33:44:55/public 2A00 --eatt 2; eatt_rc=$rc
if [ "$link_rc" = 64 ] && grep -q "the kernel owns the link" "$OUT/link-hci0.err" \
    && [ "$eatt_rc" = 64 ] && grep -q "enable_ecred" "$OUT/eatt-hci0.err"; then
    result PASS 13-link-control-refused "$(head -c 200 "$OUT/link-hci0.err"); $(head -c 200 "$OUT/eatt-hci0.err")"
else
    result FAIL 13-link-control-refused "exit $link_rc/$eatt_rc: $(head -c 300 "$OUT/link-hci0.err") $(head -c 300 "$OUT/eatt-hci0.err")"
fi

# --- the kernel's crypto self-tests (SMP needs them) --------------------------------------------
if dmesg | grep -qE 'alg: .*(test failed|failed)|WARNING: '; then
    result FAIL kernel-crypto "$(dmesg | grep -E 'alg: .*failed|WARNING: ' | head -2 | tr '\n' ' ')"
else
    result PASS kernel-crypto "no crypto self-test failure or WARN in dmesg (SMP's AES/CMAC/ECDH are sound)"
fi
dmesg >"$OUT/dmesg.txt"
log "done"
