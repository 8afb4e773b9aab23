"""Hello, devices: every platform and device pysycl sees, and which one a queue picks."""

import pysycl as sycl


def main() -> None:
    platforms = sycl.platform.get_platforms()
    for p in platforms:
        print(f"platform: {p.get_info(sycl.info.platform.name)} "
              f"({p.get_info(sycl.info.platform.vendor)}, {p.get_backend().name})")
        for d in p.get_devices():
            kind = d.get_info(sycl.info.device.device_type).name
            aspects = sorted(a.name for a in d.get_info(sycl.info.device.aspects))
            print(f"  [{kind}] {d.get_info(sycl.info.device.name)}: "
                  f"{d.get_info(sycl.info.device.max_compute_units)} compute units, "
                  f"Python kernels: {' '.join(d.ext_pysycl_image_formats()) or 'no'}")
            print(f"        aspects: {' '.join(aspects)}")

    devices = sycl.device.get_devices()
    assert devices, "no device found"
    assert len(devices) == sum(len(p.get_devices()) for p in platforms)
    q = sycl.queue()  # default_selector_v
    chosen = q.get_device()
    assert chosen in devices
    assert chosen.ext_pysycl_image_formats(), "the default device cannot run Python kernels"
    print(f"default device: {chosen.get_info(sycl.info.device.name)}")
    print(f"{len(devices)} device(s) on {len(platforms)} platform(s): OK")


if __name__ == "__main__":
    main()
