// What the front door's signatures use, re-exported one declaration at a time: `import BLE`
// is enough for an app, and no lower module comes along whole.
@_exported import struct ATT.ATTErrorCode
@_exported import enum Bluetooth.AddressType
@_exported import protocol Bluetooth.ByteDecodable
@_exported import protocol Bluetooth.ByteEncodable
@_exported import typealias Bluetooth.ByteCodable
@_exported import struct Bluetooth.ByteCodingError
@_exported import protocol Bluetooth.MedicalFloat
@_exported import struct Bluetooth.MedFloat16
@_exported import struct Bluetooth.MedFloat32
@_exported import struct Bluetooth.BluetoothAddress
@_exported import enum Bluetooth.BluetoothUUID
@_exported import struct Emulator.Simulation
@_exported import struct GATT.AttributePermissions
@_exported import struct GATT.CharacteristicDefinition
@_exported import struct GATT.CharacteristicProperties
@_exported import struct GATT.DescriptorDefinition
@_exported import struct GATT.ServiceDefinition
@_exported import struct GATT.PnPID
@_exported import struct GATT.HeartRateMeasurement
@_exported import struct GATT.BodySensorLocation
@_exported import struct GATT.SystemID
@_exported import struct GATT.Appearance
@_exported import struct GATT.PreferredConnectionParameters
@_exported import struct GATT.PresentationFormat
@_exported import struct GATT.DateTime
@_exported import struct GATT.TemperatureMeasurement
@_exported import struct GATT.TemperatureType
@_exported import struct GATT.BloodPressureMeasurement
@_exported import struct GATT.BloodPressureFeature
@_exported import struct GATT.WeightMeasurement
@_exported import struct GATT.WeightScaleFeature
@_exported import struct GATT.CurrentTime
@_exported import struct GATT.LocalTimeInformation
@_exported import struct GATT.ReferenceTimeInformation
@_exported import enum GATT.SensorTag
@_exported import enum GATT.NordicUART
@_exported import enum GATT.SecurityLevel
@_exported import struct HCI.HCIStatus
@_exported import enum Security.IOCapability
@_exported import struct Security.LongTermKey
@_exported import enum Security.PairingMethod
@_exported import struct Security.PairingOptions

import GATT

/// A service discovered on a remote device: its UUID, handle range and characteristics.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.4
public typealias RemoteService = GATT.Service
/// A characteristic discovered on a remote device: its UUID, properties, value handle and
/// descriptors.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.6
public typealias RemoteCharacteristic = GATT.Characteristic
/// A characteristic descriptor discovered on a remote device.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.7
public typealias RemoteDescriptor = GATT.Descriptor
