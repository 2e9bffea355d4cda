import { probeGpuDevices } from "../../src/engine/gpuProbe.js";

/** A Vulkan device to test on, or why there is none (the tests' skip reason). */
export type VulkanDevice = { devices: string[]; skip?: undefined } | { skip: string };

/**
 * Finds a Vulkan device for node-llama-cpp's prebuilt Vulkan build. ggml leaves CPU drivers out
 * (Mesa's lavapipe, "llvmpipe"), so when the build finds no GPU this names device 0 through
 * GGML_VK_VISIBLE_DEVICES and asks again: on a machine without a GPU, lavapipe is device 0. Set in
 * this process before its Vulkan build loads, the variables reach ggml and Mesa too. Lavapipe's
 * own threads are held to one (LP_NUM_THREADS), as every engine of the suite runs on one thread.
 */
export async function findVulkanDevice(): Promise<VulkanDevice> {
    process.env.LP_NUM_THREADS ??= "1";
    const gpu = await probeGpuDevices("vulkan");
    if (gpu.devices.length > 0) return { devices: gpu.devices };
    if (process.env.GGML_VK_VISIBLE_DEVICES === undefined) {
        process.env.GGML_VK_VISIBLE_DEVICES = "0";
        const anyDevice = await probeGpuDevices("vulkan");
        if (anyDevice.devices.length > 0) return { devices: anyDevice.devices };
        delete process.env.GGML_VK_VISIBLE_DEVICES;
    }
    return {
        skip: `no Vulkan device: ${gpu.error ?? "node-llama-cpp's Vulkan build found none"} `
            + "(it needs libvulkan.so.1 and a driver; on Debian, apt-get install mesa-vulkan-drivers gives the CPU driver lavapipe)"
    };
}
