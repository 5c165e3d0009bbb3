// SPDX-License-Identifier: GPL-2.0
/*
 * hmtt_dmatest - test helper for the QEMU test, never for production.
 *
 * At load time it maps and unmaps a single buffer (DMA_TO_DEVICE), a
 * two-entry scatterlist (DMA_FROM_DEVICE) and allocates and frees a
 * coherent buffer for a dummy platform device, and publishes the bus
 * addresses it got as read-only parameters, so the test can find the
 * matching DMA_MAP/DMA_UNMAP records in the hmtt log. It brackets that
 * work with the exported hmtt_icode() (stores of event 0x76 before and
 * 0x77 after, named in hmtt_dmatest.events.toml), so that in a trace the
 * eight DMA log tags fall between its two I-codes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "hmtt.h"

#define DMATEST_BEGIN_EVENT 0x76
#define DMATEST_END_EVENT 0x77

static unsigned long single_addr, sg_addr0, sg_addr1, coherent_addr;
module_param(single_addr, ulong, 0444);
MODULE_PARM_DESC(single_addr, "Bus address of the single 4096-byte buffer (to device)");
module_param(sg_addr0, ulong, 0444);
MODULE_PARM_DESC(sg_addr0, "Bus address of scatterlist entry 0 (2048 bytes, from device)");
module_param(sg_addr1, ulong, 0444);
MODULE_PARM_DESC(sg_addr1, "Bus address of scatterlist entry 1 (1024 bytes, from device)");
module_param(coherent_addr, ulong, 0444);
MODULE_PARM_DESC(coherent_addr, "Bus address of the 8192-byte coherent buffer");

static struct platform_device *pdev;

static int run_dma(struct device *dev)
{
	struct scatterlist sgl[2];
	void *buf, *coherent;
	dma_addr_t addr, handle;
	int ret = 0;

	buf = kmalloc(3 * PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;

	addr = dma_map_single(dev, buf, PAGE_SIZE, DMA_TO_DEVICE);
	if (dma_mapping_error(dev, addr)) {
		ret = -EIO;
		goto out;
	}
	single_addr = addr;
	dma_unmap_single(dev, addr, PAGE_SIZE, DMA_TO_DEVICE);

	sg_init_table(sgl, 2);
	sg_set_buf(&sgl[0], buf + PAGE_SIZE, 2048);
	sg_set_buf(&sgl[1], buf + 2 * PAGE_SIZE, 1024);
	if (dma_map_sg(dev, sgl, 2, DMA_FROM_DEVICE) != 2) {
		ret = -EIO;
		goto out;
	}
	sg_addr0 = sg_dma_address(&sgl[0]);
	sg_addr1 = sg_dma_address(&sgl[1]);
	dma_unmap_sg(dev, sgl, 2, DMA_FROM_DEVICE);

	coherent = dma_alloc_coherent(dev, 2 * PAGE_SIZE, &handle, GFP_KERNEL);
	if (!coherent) {
		ret = -ENOMEM;
		goto out;
	}
	coherent_addr = handle;
	dma_free_coherent(dev, 2 * PAGE_SIZE, coherent, handle);
out:
	kfree(buf);
	return ret;
}

static int __init dmatest_init(void)
{
	int ret;

	pdev = platform_device_register_simple("hmtt_dmatest", PLATFORM_DEVID_NONE,
					       NULL, 0);
	if (IS_ERR(pdev))
		return PTR_ERR(pdev);
	ret = dma_coerce_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (!ret)
		ret = hmtt_icode(DMATEST_BEGIN_EVENT, true);
	if (!ret)
		ret = run_dma(&pdev->dev);
	if (!ret)
		ret = hmtt_icode(DMATEST_END_EVENT, true);
	if (ret) {
		platform_device_unregister(pdev);
		return ret;
	}
	return 0;
}

static void __exit dmatest_exit(void)
{
	platform_device_unregister(pdev);
}

module_init(dmatest_init);
module_exit(dmatest_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("DMA map/unmap exerciser for the hmtt QEMU test");
