//! Opening a device: context, port attributes, GID choice and the protection domain.

use crate::error::VerbsError;
use crate::gid::{choose_gid, format_table, sysfs_gid_type, GidEntry};
use crate::rate::{netdev_speed, port_rate_bps, NetdevSpeed, NET_SYSFS_ROOT};
use crate::resources::{Context, Pd};
use rdma_sys::*;
use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

/// Where the kernel publishes RDMA devices.
pub const IB_SYSFS_ROOT: &str = "/sys/class/infiniband";

/// Environment variable naming the device (e.g. `rxe0`); unset: the first device.
pub const ENV_DEVICE: &str = "XRDMA_VERBS_DEVICE";
pub use crate::gid::ENV_GID_INDEX;
/// Environment variable giving the port number (1-based); unset: 1.
pub const ENV_PORT: &str = "XRDMA_VERBS_PORT";

/// `ibv_port_attr.link_layer` value of an InfiniBand port (`IBV_LINK_LAYER_INFINIBAND`).
const LINK_LAYER_INFINIBAND: u8 = 1;
/// `ibv_port_attr.link_layer` value of an Ethernet (RoCE) port (`IBV_LINK_LAYER_ETHERNET`).
const LINK_LAYER_ETHERNET: u8 = 2;

/// Which device, port and GID to use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceConfig {
    /// Device name as `ibv_devices` lists it (e.g. `rxe0`, `mlx5_0`); `None`: the first one.
    pub name: Option<String>,
    /// Port number, 1-based; `None`: 1.
    pub port: Option<u8>,
    /// GID index; `None`: chosen by [`crate::gid::choose_gid`].
    pub gid_index: Option<u32>,
}

impl DeviceConfig {
    /// Read [`ENV_DEVICE`], [`ENV_PORT`] and [`ENV_GID_INDEX`]; unset or empty variables leave
    /// the default.
    ///
    /// # Errors
    /// [`VerbsError::BadSetting`] when a number does not parse.
    pub fn from_env() -> Result<Self, VerbsError> {
        fn var(name: &str) -> Option<String> {
            std::env::var(name).ok().filter(|v| !v.trim().is_empty())
        }
        let port = match var(ENV_PORT) {
            Some(v) => Some(v.trim().parse::<u8>().map_err(|e| VerbsError::BadSetting {
                name: ENV_PORT,
                value: v.clone(),
                reason: e.to_string(),
            })?),
            None => None,
        };
        let gid_index = match var(ENV_GID_INDEX) {
            Some(v) => Some(
                v.trim()
                    .parse::<u32>()
                    .map_err(|e| VerbsError::BadSetting {
                        name: ENV_GID_INDEX,
                        value: v.clone(),
                        reason: e.to_string(),
                    })?,
            ),
            None => None,
        };
        Ok(DeviceConfig {
            name: var(ENV_DEVICE).map(|s| s.trim().to_string()),
            port,
            gid_index,
        })
    }
}

/// What the port reported (`ibv_port_attr`, read with `___ibv_query_port`, which fills the
/// extended fields that the legacy `ibv_query_port` symbol leaves unset).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortInfo {
    /// Port number, 1-based.
    pub port: u8,
    /// `IBV_PORT_*` state (4 = ACTIVE).
    pub state: u32,
    /// Active path MTU as the `IBV_MTU_*` enum (1 = 256 B … 5 = 4096 B).
    pub active_mtu: u32,
    /// Local identifier (0 on RoCE).
    pub lid: u16,
    /// `IBV_LINK_LAYER_*` (1 InfiniBand, 2 Ethernet).
    pub link_layer: u8,
    /// GID table length.
    pub gid_tbl_len: u32,
    /// `active_speed`: a lane's rate code (1 SDR … 128 NDR; [`crate::rate`]).
    pub active_speed: u8,
    /// `active_width`: the lane count code (1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x, 16 = 2x).
    pub active_width: u8,
}

impl PortInfo {
    /// Active MTU in bytes (256 << (enum − 1)).
    pub fn active_mtu_bytes(&self) -> u32 {
        match self.active_mtu {
            m @ 1..=5 => 128 << m,
            _ => 0,
        }
    }

    /// Whether the port runs InfiniBand (LID routing) rather than RoCE.
    pub fn is_infiniband(&self) -> bool {
        self.link_layer == LINK_LAYER_INFINIBAND
    }
}

fn port_state_name(s: u32) -> &'static str {
    match s {
        ibv_port_state::IBV_PORT_NOP => "NOP",
        ibv_port_state::IBV_PORT_DOWN => "DOWN",
        ibv_port_state::IBV_PORT_INIT => "INIT",
        ibv_port_state::IBV_PORT_ARMED => "ARMED",
        ibv_port_state::IBV_PORT_ACTIVE => "ACTIVE",
        ibv_port_state::IBV_PORT_ACTIVE_DEFER => "ACTIVE_DEFER",
        _ => "UNKNOWN",
    }
}

/// An open RDMA device port with its protection domain and chosen source GID. Cheap to
/// clone (the context and PD are shared); every [`crate::VerbsTransport`] made from it uses
/// the same PD.
#[derive(Clone, Debug)]
pub struct Device {
    pub(crate) ctx: Arc<Context>,
    pub(crate) pd: Arc<Pd>,
    name: String,
    port: PortInfo,
    gid: GidEntry,
    /// `ibv_device_attr.vendor_id` (IEEE OUI; Soft-RoCE reports [`crate::soft_roce::VENDOR_ID`]).
    vendor_id: u32,
    /// What the netdev under the chosen GID says of its speed (RoCE only).
    netdev: NetdevSpeed,
}

/// Names of the RDMA devices present, in `ibv_get_device_list` order.
///
/// # Errors
/// [`VerbsError::NoDevice`] when the list cannot be had (no kernel support).
pub fn device_names() -> Result<Vec<String>, VerbsError> {
    with_device_list(|list| Ok(list.iter().map(|(n, _)| n.clone()).collect()))
}

/// Call `f` with the device list (name, raw device), freeing the list afterwards.
fn with_device_list<T>(
    f: impl FnOnce(&[(String, *mut ibv_device)]) -> Result<T, VerbsError>,
) -> Result<T, VerbsError> {
    let mut n: i32 = 0;
    // SAFETY: `n` is a valid out-pointer; the returned list is freed below.
    let list = unsafe { ibv_get_device_list(&mut n) };
    if list.is_null() {
        return Err(VerbsError::NoDevice {
            reason: format!(
                "ibv_get_device_list failed: {}",
                std::io::Error::last_os_error()
            ),
        });
    }
    let mut devs = Vec::new();
    for i in 0..usize::try_from(n).unwrap_or(0) {
        // SAFETY: the list holds `n` non-null device pointers (then a NULL terminator).
        let dev = unsafe { *list.add(i) };
        if dev.is_null() {
            break;
        }
        // SAFETY: `dev` is a live device of the list; the name is a NUL-terminated string
        // owned by the device, copied out before the list is freed.
        let name = unsafe { CStr::from_ptr(ibv_get_device_name(dev)) }
            .to_string_lossy()
            .into_owned();
        devs.push((name, dev));
    }
    let r = f(&devs);
    // SAFETY: `list` came from `ibv_get_device_list`; contexts opened from its devices stay
    // valid after the list is freed (ibv_get_device_list(3)).
    unsafe { ibv_free_device_list(list) };
    r
}

impl Device {
    /// Open the device, query the port, choose the source GID and allocate the PD.
    ///
    /// # Errors
    /// [`VerbsError::NoDevice`] when no device exists, [`VerbsError::DeviceNotFound`],
    /// [`VerbsError::PortNotActive`], [`VerbsError::NoUsableGid`] (with the GID table), or
    /// [`VerbsError::Verb`] when a verb fails.
    pub fn open(cfg: &DeviceConfig) -> Result<Device, VerbsError> {
        let (name, ctx) = with_device_list(|devs| {
            if devs.is_empty() {
                return Err(VerbsError::NoDevice {
                    reason: "ibv_get_device_list returned 0 devices".into(),
                });
            }
            let pick = match &cfg.name {
                None => &devs[0],
                Some(want) => devs.iter().find(|(n, _)| n == want).ok_or_else(|| {
                    VerbsError::DeviceNotFound {
                        name: want.clone(),
                        available: devs.iter().map(|(n, _)| n.clone()).collect(),
                    }
                })?,
            };
            // SAFETY: `pick.1` is a live device of the list (freed only after we return).
            let raw = unsafe { ibv_open_device(pick.1) };
            let raw = NonNull::new(raw).ok_or_else(|| VerbsError::last("ibv_open_device"))?;
            Ok((pick.0.clone(), Arc::new(Context { raw })))
        })?;
        let port_num = cfg.port.unwrap_or(1);
        let port = query_port(&ctx, port_num).map_err(|e| match e {
            // EINVAL from the port query: the device has no such port.
            VerbsError::Verb { errno: 22, .. } => VerbsError::BadSetting {
                name: crate::device::ENV_PORT,
                value: port_num.to_string(),
                reason: format!("{name} has no port {port_num} (ports are numbered from 1; see `ibv_devinfo -d {name}`)"),
            },
            other => other,
        })?;
        if port.state != ibv_port_state::IBV_PORT_ACTIVE {
            return Err(VerbsError::PortNotActive {
                device: name,
                port: port.port,
                state: port_state_name(port.state),
            });
        }
        let table = gid_table(&ctx, &name, &port);
        let gid = choose_gid(&table, cfg.gid_index, port.is_infiniband()).map_err(|why| {
            VerbsError::NoUsableGid {
                device: name.clone(),
                port: port.port,
                why,
                table: format_table(&table),
            }
        })?;
        let vendor_id = query_vendor_id(&ctx)?;
        let pd = Arc::new(Pd::new(ctx.clone())?);
        let netdev = if port.is_infiniband() {
            NetdevSpeed::NoNetdev
        } else {
            netdev_speed(
                Path::new(IB_SYSFS_ROOT),
                Path::new(NET_SYSFS_ROOT),
                &name,
                port.port,
                gid.index,
            )
        };
        Ok(Device {
            ctx,
            pd,
            name,
            port,
            gid,
            vendor_id,
            netdev,
        })
    }

    /// The vendor id the device reports (`ibv_device_attr.vendor_id`, an IEEE OUI).
    pub fn vendor_id(&self) -> u32 {
        self.vendor_id
    }

    /// Whether this is Soft-RoCE (`rdma_rxe`), by its vendor id
    /// ([`crate::soft_roce::VENDOR_ID`]).
    pub fn is_soft_roce(&self) -> bool {
        self.vendor_id == crate::soft_roce::VENDOR_ID
    }

    /// The device name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The port's attributes.
    pub fn port(&self) -> &PortInfo {
        &self.port
    }

    /// The chosen source GID.
    pub fn gid(&self) -> &GidEntry {
        &self.gid
    }

    /// Whether the port is RoCE (Ethernet link layer, or unspecified as on older rxe).
    pub fn is_roce(&self) -> bool {
        self.port.link_layer == LINK_LAYER_ETHERNET || !self.port.is_infiniband()
    }

    /// What the netdev under the chosen GID says of its speed; [`NetdevSpeed::NoNetdev`] on
    /// an InfiniBand port.
    pub fn netdev_speed(&self) -> &NetdevSpeed {
        &self.netdev
    }

    /// The rate fragments leave the port at, bits/s ([`crate::rate::port_rate_bps`]): the
    /// decoded `active_speed` × `active_width` on InfiniBand, the netdev's speed on RoCE;
    /// `None` when not known (e.g. rxe on a virtio-net NIC that declares no speed, where the
    /// kernel's 1X SDR is its stand-in for "unknown", not a rate).
    pub fn link_rate_bps(&self) -> Option<u64> {
        port_rate_bps(
            self.is_roce(),
            self.port.active_speed,
            self.port.active_width,
            &self.netdev,
        )
    }
}

/// The device's vendor id (`ibv_query_device`).
fn query_vendor_id(ctx: &Context) -> Result<u32, VerbsError> {
    let mut attr = MaybeUninit::<ibv_device_attr>::zeroed();
    // SAFETY: `ctx.raw` is live; `attr` is a zeroed, correctly sized out-parameter.
    let rc = unsafe { ibv_query_device(ctx.raw.as_ptr(), attr.as_mut_ptr()) };
    if rc != 0 {
        return Err(VerbsError::verb("ibv_query_device", rc));
    }
    // SAFETY: zero is a valid bit pattern for every field of this plain C struct, and the
    // call above succeeded.
    Ok(unsafe { attr.assume_init() }.vendor_id)
}

fn query_port(ctx: &Context, port: u8) -> Result<PortInfo, VerbsError> {
    let mut attr = MaybeUninit::<ibv_port_attr>::zeroed();
    // SAFETY: `ctx.raw` is live; `attr` is a zeroed, correctly sized out-parameter, which
    // `___ibv_query_port` fills through the provider's extended query (size passed along).
    let rc = unsafe { ___ibv_query_port(ctx.raw.as_ptr(), port, attr.as_mut_ptr()) };
    if rc != 0 {
        return Err(VerbsError::verb("ibv_query_port", rc));
    }
    // SAFETY: zero is a valid bit pattern for every field of this plain C struct, and the
    // call above succeeded.
    let a = unsafe { attr.assume_init() };
    Ok(PortInfo {
        port,
        state: a.state,
        active_mtu: a.active_mtu,
        lid: a.lid,
        link_layer: a.link_layer,
        gid_tbl_len: u32::try_from(a.gid_tbl_len).unwrap_or(0),
        active_speed: a.active_speed,
        active_width: a.active_width,
    })
}

/// The port's non-empty GID entries with their sysfs types.
fn gid_table(ctx: &Context, dev: &str, port: &PortInfo) -> Vec<GidEntry> {
    let mut table = Vec::new();
    for index in 0..port.gid_tbl_len {
        let mut gid = MaybeUninit::<ibv_gid>::zeroed();
        // SAFETY: `ctx.raw` is live; `gid` is a 16-byte out-parameter.
        let rc =
            unsafe { ibv_query_gid(ctx.raw.as_ptr(), port.port, index as i32, gid.as_mut_ptr()) };
        if rc != 0 {
            continue; // an unused entry on some kernels
        }
        // SAFETY: the union is 16 plain bytes, zero-initialised and filled by the call.
        let raw = unsafe { gid.assume_init().raw };
        if raw.iter().all(|&b| b == 0) {
            continue;
        }
        table.push(GidEntry {
            index,
            gid: raw,
            kind: sysfs_gid_type(dev, port.port, index),
        });
    }
    table
}
