import Bluetooth

/// The GATT attribute types this module works with: declarations, descriptors and the GATT and
/// GAP service characteristics.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3 (attribute types); Bluetooth SIG Assigned Numbers §3.6–3.8
public enum GATTUUID {
    // Services
    public static let genericAccess: BluetoothUUID = 0x1800
    public static let genericAttribute: BluetoothUUID = 0x1801

    // Declarations
    public static let primaryService: BluetoothUUID = 0x2800
    public static let secondaryService: BluetoothUUID = 0x2801
    public static let include: BluetoothUUID = 0x2802
    public static let characteristic: BluetoothUUID = 0x2803

    // Descriptors
    public static let characteristicExtendedProperties: BluetoothUUID = 0x2900
    public static let characteristicUserDescription: BluetoothUUID = 0x2901
    public static let clientCharacteristicConfiguration: BluetoothUUID = 0x2902
    public static let serverCharacteristicConfiguration: BluetoothUUID = 0x2903
    public static let characteristicPresentationFormat: BluetoothUUID = 0x2904
    public static let characteristicAggregateFormat: BluetoothUUID = 0x2905

    // GAP and GATT service characteristics
    public static let deviceName: BluetoothUUID = 0x2A00
    public static let appearance: BluetoothUUID = 0x2A01
    public static let peripheralPreferredConnectionParameters: BluetoothUUID = 0x2A04
    public static let serviceChanged: BluetoothUUID = 0x2A05
    public static let centralAddressResolution: BluetoothUUID = 0x2AA6
    public static let resolvablePrivateAddressOnly: BluetoothUUID = 0x2AC9
    public static let clientSupportedFeatures: BluetoothUUID = 0x2B29
    public static let databaseHash: BluetoothUUID = 0x2B2A
    public static let serverSupportedFeatures: BluetoothUUID = 0x2B3A
}
