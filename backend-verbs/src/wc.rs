//! Mapping `ibv_wc` fields onto [`xrdma::WorkCompletion`].

use crate::qp::Retired;
use rdma_sys::{ibv_wc_flags, ibv_wc_opcode, ibv_wc_status};
use xrdma::{QpNum, WcOpcode, WcStatus, WorkCompletion};

/// `enum ibv_wc_status` → [`WcStatus`]; statuses the trait does not name become
/// [`WcStatus::GeneralErr`].
pub fn map_status(s: ibv_wc_status::Type) -> WcStatus {
    match s {
        ibv_wc_status::IBV_WC_SUCCESS => WcStatus::Success,
        ibv_wc_status::IBV_WC_LOC_LEN_ERR => WcStatus::LocLenErr,
        ibv_wc_status::IBV_WC_LOC_PROT_ERR => WcStatus::LocProtErr,
        ibv_wc_status::IBV_WC_WR_FLUSH_ERR => WcStatus::WrFlushErr,
        ibv_wc_status::IBV_WC_REM_ACCESS_ERR => WcStatus::RemAccessErr,
        ibv_wc_status::IBV_WC_RNR_RETRY_EXC_ERR => WcStatus::RnrRetryExcErr,
        ibv_wc_status::IBV_WC_RETRY_EXC_ERR => WcStatus::RetryExcErr,
        _ => WcStatus::GeneralErr,
    }
}

/// The raw fields of one `ibv_wc` that the mapping needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawWc {
    pub(crate) status: ibv_wc_status::Type,
    pub(crate) opcode: ibv_wc_opcode::Type,
    pub(crate) qp_num: QpNum,
    pub(crate) byte_len: u32,
    pub(crate) wc_flags: u32,
    /// `imm_data` as it sits in the `ibv_wc` (network order).
    pub(crate) imm_be: u32,
}

/// Build the completion of `wr` from the raw `ibv_wc`.
///
/// - opcode: a receive completion reports [`WcOpcode::RecvRdmaWithImm`] when the device says
///   `IBV_WC_RECV_RDMA_WITH_IMM`, else [`WcOpcode::Recv`]; a send-side completion reports the
///   opcode the WR was posted with (`ibv_wc.opcode` is undefined on error, `ibv_poll_cq(3)`);
/// - `byte_len`: bytes received for a receive, the posted length for a send-side WR, 0 on
///   error;
/// - `imm`: `ntohl(imm_data)` when `IBV_WC_WITH_IMM` is set on a successful completion.
pub(crate) fn to_completion(raw: &RawWc, wr: &Retired) -> WorkCompletion {
    let status = map_status(raw.status);
    let ok = status == WcStatus::Success;
    let opcode = if wr.recv {
        if ok && raw.opcode == ibv_wc_opcode::IBV_WC_RECV_RDMA_WITH_IMM {
            WcOpcode::RecvRdmaWithImm
        } else {
            WcOpcode::Recv
        }
    } else {
        wr.opcode
    };
    let byte_len = match (ok, wr.recv) {
        (false, _) => 0,
        (true, true) => raw.byte_len,
        (true, false) => wr.len,
    };
    let with_imm = raw.wc_flags & ibv_wc_flags::IBV_WC_WITH_IMM.0 != 0;
    WorkCompletion {
        wr_id: wr.wr_id,
        status,
        opcode,
        qp_num: raw.qp_num,
        byte_len,
        imm: (ok && with_imm).then(|| u32::from_be(raw.imm_be)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recv() -> Retired {
        Retired {
            wr_id: 7,
            opcode: WcOpcode::Recv,
            len: 4096,
            recv: true,
        }
    }

    #[test]
    fn write_with_imm_arrival_decodes_big_endian_imm() {
        // 0x01020304 on the wire is the bytes 01 02 03 04, which a little-endian load reads
        // as 0x04030201; the mapping must give back 0x01020304.
        let raw = RawWc {
            status: ibv_wc_status::IBV_WC_SUCCESS,
            opcode: ibv_wc_opcode::IBV_WC_RECV_RDMA_WITH_IMM,
            qp_num: 0x11,
            byte_len: 1000,
            wc_flags: ibv_wc_flags::IBV_WC_WITH_IMM.0,
            imm_be: 0x0102_0304u32.to_be(),
        };
        let wc = to_completion(&raw, &recv());
        assert_eq!(wc.opcode, WcOpcode::RecvRdmaWithImm);
        assert_eq!(wc.imm, Some(0x0102_0304));
        assert_eq!(wc.byte_len, 1000);
        assert_eq!(wc.wr_id, 7);
    }

    #[test]
    fn an_error_completion_takes_its_opcode_from_the_posted_wr() {
        // The device leaves `opcode` undefined on error; 0xdead stands for garbage.
        let raw = RawWc {
            status: ibv_wc_status::IBV_WC_RNR_RETRY_EXC_ERR,
            opcode: 0xdead,
            qp_num: 0x11,
            byte_len: 99,
            wc_flags: ibv_wc_flags::IBV_WC_WITH_IMM.0,
            imm_be: 5,
        };
        let sent = Retired {
            wr_id: 3,
            opcode: WcOpcode::Send,
            len: 64,
            recv: false,
        };
        let wc = to_completion(&raw, &sent);
        assert_eq!(wc.status, WcStatus::RnrRetryExcErr);
        assert_eq!(wc.opcode, WcOpcode::Send);
        assert_eq!((wc.byte_len, wc.imm), (0, None));
    }

    #[test]
    fn unnamed_statuses_are_general_errors() {
        assert_eq!(
            map_status(ibv_wc_status::IBV_WC_REM_OP_ERR),
            WcStatus::GeneralErr
        );
        assert_eq!(
            map_status(ibv_wc_status::IBV_WC_WR_FLUSH_ERR),
            WcStatus::WrFlushErr
        );
    }
}
