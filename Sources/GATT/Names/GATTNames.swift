import Bluetooth

/// Names of UUIDs a BLE user meets. Placeholder for the SIG table (step 2).
public enum GATTNames {
    public static func name(for uuid: BluetoothUUID) -> String? { nil }
}
