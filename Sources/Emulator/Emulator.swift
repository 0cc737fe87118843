import GATT
